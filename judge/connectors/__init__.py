"""Where verdicts go and traces come from, outside judge: OpenTelemetry GenAI evaluation events
(``otel``), and platform connectors (``platform``: the framework; ``phoenix``, ``mlflow``,
``langfuse``; more as entry points of the group ``judge.connectors``) over a shared HTTP client
(``http``)."""

from judge.connectors.errors import (
    ConnectorError,
    LabelError,
    PlatformAuthError,
    PlatformNotFound,
    PlatformUnavailable,
    TargetError,
)
from judge.connectors.http import HttpClient, mask_url
from judge.connectors.otel import SEMCONV_VERSION, export_otel
from judge.connectors.platform import (
    SOURCE_KEYS,
    Connector,
    LabelsRead,
    PlatformLabel,
    Route,
    SplitTarget,
    Target,
    VerdictOut,
    connectors,
    is_target_url,
    platforms,
    resolve,
    split_target,
)

__all__ = [
    "SEMCONV_VERSION",
    "SOURCE_KEYS",
    "Connector",
    "ConnectorError",
    "HttpClient",
    "LabelError",
    "LabelsRead",
    "PlatformAuthError",
    "PlatformLabel",
    "PlatformNotFound",
    "PlatformUnavailable",
    "Route",
    "SplitTarget",
    "Target",
    "TargetError",
    "VerdictOut",
    "connectors",
    "export_otel",
    "is_target_url",
    "mask_url",
    "platforms",
    "resolve",
    "split_target",
]
