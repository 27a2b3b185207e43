"""The judge names a candidate cluster: a definition stating a checkable mechanism, or nothing.

The naming prompt is a small versioned spec beside the verdict rubrics,
``rubrics/failure-cluster-name/v<N>/`` (``naming.yaml`` and ``prompt.md``; not a verdict rubric,
so ``judge rubrics`` does not list it). The judge sees the members' labels, local summaries and
features, never the system under test nor the run ids (members are ``M1``, ``M2``...), and
answers through the providers' structured-output path (:func:`judge.providers.call_model`) with a
``cluster_id`` slug, a ``definition``, ``exclusions``, a ``condition`` (feature = value pairs) and
the member runs it ``cited``.

:func:`check_name` refuses a name that states no checkable mechanism: an outcome instead of a
mechanism ("the model did poorly", "complex task failed"), a condition that is empty, not shared
by every member (so not a rule the members meet) or not stated in the definition, or citations of
runs that are not members. A refused answer is re-asked with the reasons; when the re-asks are
spent the cluster stays a candidate with ``rejected`` saying why.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from judge.digests import bytes_digest
from judge.errors import InfraError, JudgeError, ParseError
from judge.failures.assign import Namer, exposure_condition
from judge.failures.cluster import Candidate, shared_features
from judge.failures.models import Cluster, RunRecord
from judge.providers import ModelParams, call_model
from judge.rubrics import rubrics_dir

NAMING_SPEC = "failure-cluster-name"
NAMING_VERSION = 1
#: Outcomes, not mechanisms: a definition that says only this is refused.
VAGUE = re.compile(
    r"\b(did (poorly|badly|not do well)|performed (poorly|badly)|poor(ly)? performance|"
    r"complex task|difficult task|hard task|task (was )?failed|failed the task|"
    r"made (a )?mistakes?|was wrong|went wrong|general (failure|error)s?|various|miscellaneous|"
    r"other (errors|failures)|unknown (reason|cause))\b",
    re.IGNORECASE,
)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{2,60}$")
#: A definition shorter than this states no mechanism.
MIN_WORDS = 8


class ConditionPair(BaseModel):
    feature: str
    value: str


class ClusterName(BaseModel):
    """The judge's answer."""

    cluster_id: str = Field(description="a lower-case slug of the mechanism")
    definition: str
    exclusions: list[str] = Field(default_factory=list)
    condition: list[ConditionPair] = Field(default_factory=list)
    cited: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class NamingSpec:
    """The naming prompt of one version, and its digest (kept in each cluster's lineage)."""

    ref: str
    system: str
    user: str
    max_members: int
    summary_chars: int
    digest: str


@cache
def load_naming(version: int = NAMING_VERSION, root: Path | None = None) -> NamingSpec:
    """The naming spec ``rubrics/failure-cluster-name/v<version>``."""
    import yaml

    folder = rubrics_dir(root, NAMING_SPEC) / NAMING_SPEC / f"v{version}"
    try:
        raw = (folder / "naming.yaml").read_bytes()
        prompt = (folder / "prompt.md").read_bytes()
    except OSError as exc:
        raise JudgeError(f"{folder}: cannot read the naming spec: {exc.strerror}") from exc
    spec = yaml.safe_load(raw)
    system, _, user = prompt.decode("utf-8").partition("<!-- user -->\n")
    return NamingSpec(
        ref=f"{NAMING_SPEC}@{version}",
        system=system.strip(),
        user=user,
        max_members=int(spec["max_members"]),
        summary_chars=int(spec["summary_chars"]),
        digest=bytes_digest(raw + b"\0" + prompt),
    )


def _data(text: str | None, limit: int) -> str:
    """Run text as data: clipped, and unable to close its ``<run>`` block."""
    clipped = (text or "-").replace("\n", " ")[:limit]
    return re.sub(r"<(/?)run\b", r"<\1 run", clipped, flags=re.IGNORECASE)


def naming_messages(
    spec: NamingSpec, members: Sequence[RunRecord], terms: Sequence[str] = ()
) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The naming request for ``members`` (blind: no run ids, no system), and member id ->
    case id (``M1`` -> the first member shown)."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    shown = sorted(members, key=lambda r: r.case_id)[: spec.max_members]
    ids = {f"M{i + 1}": r.case_id for i, r in enumerate(shown)}
    runs = [
        {
            "id": key,
            "symptom": _data(r.symptom, 200),
            "critical_cause": _data(r.critical_cause, 300),
            "root_mechanism": _data(r.root_mechanism, 100),
            "features": ", ".join(f"{k}={_data(v, 60)}" for k, v in sorted(r.features.items())),
            "summary": _data(r.summary, spec.summary_chars),
        }
        for key, r in zip(ids, shown, strict=True)
    ]
    env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    user = env.from_string(spec.user).render(
        shared=shared_features(members), members=runs, total=len(members), terms=list(terms)
    )
    return [{"role": "system", "content": spec.system}, {"role": "user", "content": user}], ids


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def check_name(
    answer: ClusterName, shared: Mapping[str, str], member_ids: Sequence[str]
) -> str | None:
    """None when ``answer`` states a checkable mechanism; else every reason it does not."""
    problems = []
    definition = answer.definition.strip()
    if len(definition.split()) < MIN_WORDS:
        problems.append(f"the definition has fewer than {MIN_WORDS} words: state the mechanism")
    vague = VAGUE.search(definition)
    if vague:
        problems.append(
            f"the definition states an outcome ({vague.group(0)!r}), not a mechanism a rule "
            "could check"
        )
    if not _SLUG.match(answer.cluster_id):
        problems.append("cluster_id must be a lower-case slug (letters, digits, hyphens)")
    if not answer.condition:
        problems.append("the condition is empty: give feature = value pairs from the shared list")
    said = _words(definition)
    for pair in answer.condition:
        if shared.get(pair.feature) != pair.value:
            problems.append(
                f"condition {pair.feature}={pair.value} is not shared by every member "
                f"(shared: {', '.join(f'{k}={v}' for k, v in shared.items()) or 'none'})"
            )
        elif _words(pair.value) not in said and _words(pair.feature) not in said:
            problems.append(f"the definition does not state the condition {pair.feature}=...")
    wrong = [c for c in answer.cited if c not in member_ids]
    if not answer.cited or wrong:
        problems.append(
            f"cite member runs by their ids ({', '.join(member_ids)})"
            + (f"; not members: {', '.join(wrong)}" if wrong else "")
        )
    return "; ".join(problems) or None


def model_namer(
    model: str, params: ModelParams | None = None, version: int = NAMING_VERSION
) -> Namer:
    """A namer that asks ``model`` (any litellm model; the embedded one offline)."""
    spec = load_naming(version)
    params = params or ModelParams(max_tokens=700)

    def name(candidate: Candidate, records: Sequence[RunRecord]) -> Cluster:
        wanted = set(candidate.cluster.members)
        members = [r for r in records if r.case_id in wanted]
        messages, ids = naming_messages(spec, members, candidate.terms)
        shared = shared_features(members)

        def check(answer: BaseModel) -> str | None:
            assert isinstance(answer, ClusterName)
            return check_name(answer, shared, list(ids))

        try:
            result = asyncio.run(call_model(model, messages, ClusterName, (), params, check=check))
        except (ParseError, InfraError) as exc:  # no valid name: the cluster stays unnamed
            return candidate.cluster.model_copy(update={"rejected": f"{model}: {exc}"[:2000]})
        answer = result.answer
        assert isinstance(answer, ClusterName)
        return apply_name(candidate.cluster, answer, ids, result.unmet, f"{spec.ref} {model}")

    return name


def apply_name(
    cluster: Cluster, answer: ClusterName, ids: Mapping[str, str], unmet: str | None, by: str
) -> Cluster:
    """``cluster`` named by ``answer`` (its id becomes the slug), or refused with the reasons."""
    if unmet is not None:
        return cluster.model_copy(update={"rejected": unmet})
    update: dict[str, Any] = {
        "cluster_id": answer.cluster_id,
        "definition": answer.definition.strip(),
        "exclusions": [e.strip() for e in answer.exclusions if e.strip()],
        # The candidate's run-feature pairs stay (what exposure is counted with: the namer may
        # name only the critical step's), with the namer's pairs.
        "condition": {
            **exposure_condition(cluster.condition),
            **{p.feature: p.value for p in answer.condition},
        },
        "cited": [ids[c] for c in answer.cited],
        "status": "named",
        "rejected": None,
        "lineage": [
            *cluster.lineage,
            f"named {answer.cluster_id} from {cluster.cluster_id} by {by}",
        ],
    }
    return cluster.model_copy(update=update)
