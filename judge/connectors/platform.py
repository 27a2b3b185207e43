"""Platform connectors: where agent traces and reviewers already are (Phoenix, MLflow, Langfuse).

A platform connector is one module and one entry point of the group ``judge.connectors`` (the
built-in ones in judge's pyproject.toml, a plugin's in its own); the scheme of a target URL picks
it: ``phoenix+http://HOST:PORT/projects/NAME`` is the connector registered as ``phoenix``,
spoken over ``http`` (``+https`` too)::

    [project.entry-points."judge.connectors"]
    phoenix = "judge.connectors.phoenix:PhoenixConnector"

A connector does three things and nothing else (:class:`Connector`):

* **cases from traces** (:meth:`Connector.cases`): the platform's spans, converted into what an
  existing span reader reads (OpenInference/GenAI spans go through
  :func:`judge.traces.otel.read_otlp`); never a second span -> case mapping. Each case's meta
  records where it came from (:data:`SOURCE_KEYS`);
* **verdicts out** (:meth:`Connector.export`): each :class:`VerdictOut` is one (case, rubric,
  judge model); ``VerdictOut.key`` is stable, so that exporting again updates the platform's
  record instead of adding one;
* **people's labels back** (:meth:`Connector.labels`): raw :class:`PlatformLabel` values with
  who, when and which annotation; mapping them to pass/fail is the workflow's
  (``judge.exchange``).

Connectors hold no SQL and no judging logic: the workflow reads the store, pools judgments into
verdicts, keeps the export ledger and writes gold. Everything sent is redacted first
(``judge.safety.redact``). HTTP goes through :mod:`judge.connectors.http` (timeouts, retries on
5xx / timeouts / resets only, secrets masked in every message).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import parse_qsl, unquote, urlsplit

from judge import plugins
from judge.connectors.errors import TargetError
from judge.connectors.http import mask_url
from judge.digests import digest_hex
from judge.traces import ImportResult

#: The case meta keys a connector sets on every case it builds: the platform (connector name),
#: the target (:attr:`Target.canonical`), the trace id and the trace's root span id.
SOURCE_KEYS = ("platform", "target", "trace_id", "root_span_id")

T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """A place on a platform, parsed from ``<platform>+<http|https>://[user[:secret]@]host[:port]
    [/prefix]/<resource>[?options]``.

    ``base`` is the platform's HTTP root (``http://host:port/prefix``, without credentials);
    ``resource`` the platform's name for what is addressed (a project name, an experiment id);
    ``options`` the query's ``key=value`` pairs, for the connector to read. ``canonical`` is
    what the cases imported from here record as their ``target`` (no credentials, no options),
    and what the export ledger is keyed by.
    """

    platform: str
    scheme: str
    base: str
    resource: str
    canonical: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SplitTarget:
    """A target URL split before its connector reads the path: ``platform``, ``scheme`` (http
    or https), ``netloc`` without credentials, the ``path`` as given (percent-encoded: the
    connector decodes the names it reads), the credentials (decoded) and the query options."""

    url: str
    platform: str
    scheme: str
    netloc: str
    path: str
    username: str | None
    password: str | None
    options: Mapping[str, str]

    def target(self, prefix: str, resource: str, canonical_path: str) -> Target:
        """The :class:`Target` with the HTTP root ``scheme://netloc/prefix``, the platform's
        ``resource`` and the canonical form ``platform+scheme://netloc/prefix/canonical_path``."""
        prefix = prefix.strip("/")
        base = f"{self.scheme}://{self.netloc}" + (f"/{prefix}" if prefix else "")
        canonical = f"{self.platform}+{self.scheme}://{self.netloc}" + (
            f"/{prefix}" if prefix else ""
        )
        return Target(
            platform=self.platform,
            scheme=self.scheme,
            base=base,
            resource=resource,
            canonical=canonical + (f"/{canonical_path.lstrip('/')}" if canonical_path else ""),
            username=self.username,
            password=self.password,
            options=dict(self.options),
        )


def is_target_url(value: str) -> bool:
    """True when ``value`` looks like ``<platform>+http(s)://...`` (not a file path)."""
    head, sep, _ = str(value).partition("://")
    return bool(sep) and "+" in head and "/" not in head


@dataclass(frozen=True)
class Route:
    """The routing decision of a verdict, when its case was routed with a card."""

    decision: str  # auto_accept | auto_reject | auto_decide | review
    band: str | None
    reason: str
    detail: str
    card_digest: str
    #: The pooled score after the card's calibrator.
    score: float | None
    routed_at: datetime


@dataclass(frozen=True)
class VerdictOut:
    """One judge's verdict on one case under one rubric, ready to leave judge.

    ``key`` identifies (case, rubric, judge model) and never changes, so a connector uses it
    (or the platform's own key built from the same three) to update the record on a second
    export. ``digest`` changes with any field: the export ledger sends a verdict again only
    when it differs from what was sent. ``label`` is None when the judge abstained or failed
    (``status`` says which); ``explanation`` is the judge's rationale with the cited evidence
    ids, redacted.
    """

    key: str
    digest: str
    case_id: str
    trace_id: str
    root_span_id: str | None
    rubric_id: str
    rubric_version: int
    model: str
    status: str
    label: str | None
    p_pass: float | None
    explanation: str
    judgment_ids: tuple[str, ...]
    route: Route | None = None

    @property
    def short_digest(self) -> str:
        """The first 16 hex digits of :attr:`digest`: enough to tell whether a platform holds
        this content (not a security boundary), in fewer bytes on every record."""
        return digest_hex(self.digest)[:16]

    def metadata(self) -> dict[str, Any]:
        """The verdict's provenance as a flat JSON object (each connector may reshape it)."""
        out: dict[str, Any] = {
            "rubric": f"{self.rubric_id}@{self.rubric_version}",
            "model": self.model,
            "status": self.status,
            "judgment_ids": list(self.judgment_ids),
            "digest": self.short_digest,
        }
        if self.route is not None:
            out.update(
                {
                    "route": self.route.decision,
                    "band": self.route.band,
                    "reason": self.route.reason,
                    "route_detail": self.route.detail,
                    "card": self.route.card_digest,
                    "routed_score": self.route.score,
                }
            )
        return out


@dataclass(frozen=True)
class PlatformLabel:
    """A person's label as the platform holds it, before any mapping to pass/fail.

    ``value`` is the label text (a score-only annotation gives its score as text, e.g. ``"1"``);
    ``annotation_id`` the platform's id of the annotation; ``annotator`` who gave it (None when
    the platform does not know, e.g. Phoenix without auth); ``span_id`` set when the label is
    on a span rather than on the whole trace.
    """

    trace_id: str
    span_id: str | None
    name: str
    value: str | None
    score: float | None
    annotation_id: str
    annotator: str | None
    created_at: datetime | None
    explanation: str | None = None


@dataclass
class LabelsRead:
    """The labels named ``name`` that people gave on a target, and the other names seen (to
    say what exists when ``name`` matched nothing)."""

    labels: list[PlatformLabel] = field(default_factory=list)
    other_names: list[str] = field(default_factory=list)


@runtime_checkable
class Connector(Protocol):
    """What every registered platform connector provides."""

    name: str
    description: str

    def target(self, split: SplitTarget) -> Target:
        """Read the platform's path (``/projects/NAME``, ``/experiments/ID``, ...); a
        TargetError saying the expected form otherwise."""
        ...

    def cases(self, target: Target, *, trace_ids: Sequence[str] = ()) -> ImportResult:
        """The traces of ``target`` (only ``trace_ids`` when given) as cases whose meta has
        :data:`SOURCE_KEYS`; PlatformNotFound for an unknown project or trace id."""
        ...

    def export(self, target: Target, verdicts: Sequence[VerdictOut]) -> Iterator[list[VerdictOut]]:
        """Send the verdicts in batches of the connector's choosing; yield each batch once the
        platform stores it (never before), so that an interrupted export loses nothing it
        reported. Sending a verdict again updates the platform's record of its ``key``."""
        ...

    def labels(self, target: Target, *, name: str) -> LabelsRead:
        """Every label named ``name`` that a person (not a program) gave on ``target``."""
        ...


@cache
def connectors() -> Mapping[str, Connector]:
    """name -> connector: every entry point of the group ``judge.connectors`` (a class is
    instantiated; its name is the entry point's)."""
    found: dict[str, Connector] = plugins.load_named(
        plugins.CONNECTORS,
        Connector,
        "a connector (it needs a name, a description, target(split), cases(target), "
        "export(target, verdicts) and labels(target, name=))",
    )
    return MappingProxyType(found)


def split_target(url: str) -> SplitTarget:
    """The parts of a target URL; TargetError when it is not ``<platform>+http(s)://HOST...``."""
    shown = mask_url(url)
    if not is_target_url(url):
        raise TargetError(
            f"{shown}: not a platform URL",
            hint="give PLATFORM+http://HOST:PORT/..., e.g. "
            "phoenix+http://127.0.0.1:6006/projects/default",
        )
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a bad port
    except ValueError as err:
        raise TargetError(f"{shown}: not a valid URL ({err})") from err
    platform, _, scheme = parts.scheme.partition("+")
    if scheme not in ("http", "https"):
        raise TargetError(f"{shown}: the transport after '+' must be http or https, not {scheme!r}")
    if not parts.hostname:
        raise TargetError(f"{shown}: no host")
    host = parts.hostname
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = host + (f":{port}" if port is not None else "")
    return SplitTarget(
        url=url,
        platform=platform,
        scheme=scheme,
        netloc=netloc,
        path=parts.path,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        options=dict(parse_qsl(parts.query)),
    )


def resolve(url: str) -> tuple[Connector, Target]:
    """The connector a target URL names (by its scheme) and the target it reads from the URL;
    TargetError naming the known platforms otherwise."""
    split = split_target(url)
    found = connectors().get(split.platform)
    if found is None:
        known = ", ".join(f"{name}+http(s)://" for name in sorted(connectors())) or "none"
        raise TargetError(
            f"{mask_url(url)}: no connector for the platform {split.platform!r}",
            hint=f"known: {known}",
        )
    return found, found.target(split)


def platforms() -> list[tuple[str, str]]:
    """(name, description) of every registered connector, by name."""
    return [(name, c.description) for name, c in sorted(connectors().items())]


# ---------------------------------------------------------------------------------------------
# What every connector reads and sends the same way.


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter): the batches a connector sends or
    asks for."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def iso_time(value: Any) -> datetime | None:
    """A platform's ISO 8601 time (``Z`` for UTC accepted) as a datetime; None when it is not
    a non-empty string or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def iso_nanos(value: Any) -> int:
    """A platform's ISO 8601 time as OTLP's Unix nanoseconds (to the microsecond); 0 when it
    is not a time (:func:`iso_time`)."""
    moment = iso_time(value)
    return int(moment.timestamp() * 1_000_000) * 1000 if moment is not None else 0
