"""Rubrics: versioned folders of instructions that turn evidence into a prompt and an answer.

A rubric lives in ``rubrics/<id>/v<N>/`` as ``rubric.yaml`` (validated by :class:`RubricSpec`)
and a prompt template (``prompt.md``). A published version is immutable: any change is a new
``v<N+1>`` folder, and every stored verdict records the rubric id, version and
:attr:`Rubric.digest` (sha256 over both files).

The prompt template is Jinja2 with ``StrictUndefined`` in a sandbox, in two parts split by a
line ``<!-- user -->``:

- the **system** part sees only the rubric (``rubric``, ``labels``, ``all_labels``,
  ``abstain_label``, ``criteria``) and is rendered once at load, so it is identical for every
  case and a provider can reuse its cached prefix;
- the **user** part also sees the case, through its evidence only: ``task`` (the task item),
  ``candidates`` (pairwise, in the order shown), ``evidence`` (diff and trace items),
  ``n_dropped``. Case ids, slices, meta and the agent's model never reach a template.

Each evidence item is written with the ``evidence`` filter as
``<evidence id="E3" kind="test_run" source="msg-41" role="observation">...</evidence>``, with any
evidence tag inside the text neutralised, so text from a run cannot pose as another item.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from judge import kinds, plugins
from judge.answers import (
    CRITERION_LABELS,
    MAX_CITATIONS,
    RATIONALE_MAX_CHARS,
    answer_model,
    diagnosis_model,
    diagnosis_verdict,
)
from judge.digests import bytes_digest
from judge.errors import RubricError
from judge.evidence import EvidenceSet, check_citations
from judge.kinds import RubricKind
from judge.steps import candidate_steps
from judge.types import (
    ABSTAIN_LABEL,
    OWNERS,
    Case,
    CriterionVerdict,
    EvidenceItem,
    Order,
    Strict,
    Verdict,
)

if TYPE_CHECKING:
    from jinja2 import Environment

#: The rubrics shipped with the project; override with $JUDGE_RUBRICS_DIR or ``root=``.
RUBRICS_DIR = Path(__file__).resolve().parents[1] / "rubrics"
RUBRICS_DIR_ENV = "JUDGE_RUBRICS_DIR"
RUBRIC_FILE = "rubric.yaml"
#: The line in a prompt template that separates the system part from the user part.
USER_MARKER = "<!-- user -->"
ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: Criterion ids are also JSON answer values; snake_case reads best there.
CRITERION_ID_PATTERN = r"^[a-z][a-z0-9_]*$"
_ID = re.compile(ID_PATTERN)
_REF = re.compile(r"^(?P<id>[a-z0-9][a-z0-9-]*)(?:@(?P<version>[1-9][0-9]*))?$")
_VERSION_DIR = re.compile(r"^v([1-9][0-9]*)$")


class CriterionSpec(Strict):
    """One criterion of a rubric: a question, whether failing it fails the run, its weight."""

    id: str = Field(pattern=CRITERION_ID_PATTERN)
    question: str = Field(min_length=1)
    hard_gate: bool = False
    weight: float = Field(default=1.0, ge=0.0)


class InvariantSpec(Strict):
    """One invariant of an ``fbd`` rubric's catalogue: what a run must not break."""

    id: str = Field(pattern=ID_PATTERN)
    statement: str = Field(min_length=1)


class DecidedCriterion(Strict):
    """A criterion a failing hard check decides (``fail``, with no model asked about it)."""

    criterion: str = Field(pattern=CRITERION_ID_PATTERN)
    #: Decide only when the run's trace holds a test run (a functional check needs one).
    needs_test_run: bool = False


#: What a run-level contract asks of a run's trace (judge.checks.contracts).
ContractKind = Literal["tool_invoked", "evidence_kept", "decision_followed", "command_forbidden"]


class ContractSpec(Strict):
    """A run-level contract check, as data: ``tool_invoked`` (a turn matches ``pattern``: a
    required tool or skill was used), ``evidence_kept`` (the diff or a turn matches
    ``pattern``), ``decision_followed`` (after a turn matching ``when``, a later turn matches
    ``pattern``), ``command_forbidden`` (no tool call matches ``pattern``). Patterns are
    Python regular expressions, searched case-insensitively."""

    id: str = Field(pattern=ID_PATTERN)
    kind: ContractKind
    pattern: str = Field(min_length=1)
    when: str | None = None
    description: str = ""

    @field_validator("pattern", "when")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from exc
        return pattern

    @model_validator(mode="after")
    def _when_for_decisions(self) -> ContractSpec:
        if (self.kind == "decision_followed") != (self.when is not None):
            raise ValueError("'when' (the decision point) is needed by decision_followed only")
        return self


class ChecksSpec(Strict):
    """The deterministic layer under the judge (the composite verdict): which criteria checks
    decide, the files an agent must not touch, and the run-level contracts."""

    #: Criteria a failing hard check decides; for a rubric without criteria, any of these
    #: decides the whole verdict.
    decides: list[DecidedCriterion] = Field(default_factory=list)
    #: Glob patterns of evaluator or protected files (a diff touching one fails a check).
    protected: list[str] = Field(default_factory=list)
    contracts: list[ContractSpec] = Field(default_factory=list)
    #: Ask the model about the criteria no check decided (False: a decided run needs no call).
    judge_rest: bool = True


class RubricSpec(Strict):
    """The validated content of a ``rubric.yaml``."""

    id: str = Field(pattern=ID_PATTERN)
    version: int = Field(ge=1)
    kind: RubricKind
    title: str = Field(min_length=1)
    description: str = Field(min_length=1)
    labels: list[str] = Field(min_length=2)
    evidence_visible: list[Literal["task", "candidates", "diff", "trace"]] = Field(min_length=1)
    #: Case fields this rubric promises never to show (documentation: templates only ever get
    #: evidence, so every field outside it is blinded).
    blinded_fields: list[str] = Field(default_factory=list)
    criteria: list[CriterionSpec] = Field(default_factory=list)
    prompt: str = Field(default="prompt.md", pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    token_budget: int | None = Field(default=None, ge=200)
    #: Prompt variants ("simulated annotators"): each is a closing instruction given to the
    #: template as ``variant``; a case is judged once per variant and the probabilities averaged.
    variants: list[str] = Field(default_factory=list)
    #: The most evidence ids one answer may cite (a cap keeps small models from listing all).
    max_citations: int = Field(default=MAX_CITATIONS, ge=1, le=MAX_CITATIONS)
    #: An ``fbd`` rubric's invariant catalogue (versioned with the rubric); a judge names one of
    #: these ids, or ``other``, as the invariant the critical step broke.
    invariants: list[InvariantSpec] = Field(default_factory=list)
    #: The checks run before the model (judge.judging.composite); None: no checks.
    checks: ChecksSpec | None = None
    #: Another rubric whose ``checks`` this one runs as its gate layer (``id@N``: a pinned,
    #: immutable version), instead of declaring its own.
    gates: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]*@[1-9][0-9]*$")

    @field_validator("labels")
    @classmethod
    def _labels_are_plain(cls, labels: list[str]) -> list[str]:
        if ABSTAIN_LABEL in labels:
            raise ValueError(f"'{ABSTAIN_LABEL}' is always allowed; do not list it")
        if len(set(labels)) != len(labels):
            raise ValueError("labels must be unique")
        return labels

    @field_validator("criteria")
    @classmethod
    def _criteria_unique(cls, criteria: list[CriterionSpec]) -> list[CriterionSpec]:
        ids = [c.id for c in criteria]
        if len(set(ids)) != len(ids):
            raise ValueError("criterion ids must be unique")
        return criteria


def _check_kind(spec: RubricSpec, file: Path) -> None:
    """Labels fit the kind; kind-specific needs (criteria, candidates)."""
    rule = kinds.kind(spec.kind)
    labels = set(spec.labels)
    if not rule.required <= labels or not labels <= rule.allowed:
        raise RubricError(
            f"{file}: field 'labels': a {spec.kind} rubric needs the labels "
            f"{sorted(rule.required)} and may add only {sorted(rule.allowed - rule.required)}; "
            f"got {spec.labels}"
        )
    if rule.criteria and not spec.criteria:
        raise RubricError(f"{file}: field 'criteria': a {spec.kind} rubric needs criteria")
    if rule.steps and not spec.invariants:
        raise RubricError(f"{file}: field 'invariants': a {spec.kind} rubric needs a catalogue")
    if spec.invariants and not rule.steps:
        raise RubricError(f"{file}: field 'invariants': only an fbd rubric has invariants")
    if spec.checks is not None and spec.gates is not None:
        raise RubricError(f"{file}: fields 'checks' and 'gates': declare checks or name them")
    if spec.checks is not None and rule.criteria:
        known = {c.id for c in spec.criteria}
        unknown = [d.criterion for d in spec.checks.decides if d.criterion not in known]
        if unknown:
            raise RubricError(
                f"{file}: field 'checks.decides': {unknown} are not criteria of this rubric"
            )
    if rule.must_show is not None and rule.must_show not in spec.evidence_visible:
        raise RubricError(
            f"{file}: field 'evidence_visible': a {spec.kind} rubric must show '{rule.must_show}'"
        )


# ---------------------------------------------------------------------------------------------
# Locating and loading.


def rubric_roots(root: Path | None = None) -> list[Path]:
    """Where rubrics are looked up: ``root`` if given, else $JUDGE_RUBRICS_DIR, else every
    folder registered in the entry-point group ``judge.rubrics`` (the project's rubrics/ and
    those of installed plugin packages), in entry-point name order."""
    if root is not None:
        return [Path(root)]
    env = os.environ.get(RUBRICS_DIR_ENV)
    if env:
        return [Path(env)]
    return [
        Path(obj() if callable(obj) else obj) for _, obj in plugins.load_group(plugins.RUBRICS)
    ] or [RUBRICS_DIR]


def rubrics_dir(root: Path | None = None, rubric_id: str | None = None) -> Path:
    """The folder that holds ``rubric_id`` (the first root that has it), or the first root.
    Two installed roots with the same rubric id are refused: one id, one rubric."""
    roots = rubric_roots(root)
    if rubric_id is None:
        return roots[0]
    holding = [r for r in roots if _versions(r / rubric_id)]
    if len(holding) > 1:
        raise RubricError(
            f"rubric '{rubric_id}' is in several rubric folders "
            f"({', '.join(map(str, holding))}); uninstall one of the plugins or "
            f"set ${RUBRICS_DIR_ENV}"
        )
    return holding[0] if holding else roots[0]


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``"id"`` -> (id, None); ``"id@3"`` -> (id, 3). Anything else (e.g. a path) is refused."""
    match = _REF.match(ref.strip())
    if match is None:
        raise RubricError(
            f"invalid rubric reference {ref!r}: use 'id' or 'id@N', where the id matches "
            f"{ID_PATTERN} (lower-case letters, digits and '-'; no paths)"
        )
    version = match.group("version")
    return match.group("id"), int(version) if version else None


def _versions(folder: Path) -> list[int]:
    """The published versions in a rubric's folder, ascending."""
    if not folder.is_dir():
        return []
    found = []
    for child in folder.iterdir():
        match = _VERSION_DIR.match(child.name)
        if match and (child / RUBRIC_FILE).is_file():
            found.append(int(match.group(1)))
    return sorted(found)


def _available(root: Path) -> str:
    """What exists under ``root``, for error messages: "a@1,2; b@1"."""
    if not root.is_dir():
        return f"nothing: {root} does not exist"
    parts = []
    for child in sorted(root.iterdir()):
        versions = _versions(child)
        if _ID.match(child.name) and versions:
            parts.append(f"{child.name}@{','.join(map(str, versions))}")
    return "; ".join(parts) or f"nothing under {root}"


def load_rubric(ref: str, root: Path | None = None) -> Rubric:
    """Load and validate rubric ``ref`` ("id" for the latest version, or "id@N")."""
    rubric_id, version = parse_ref(ref)
    base = rubrics_dir(root, rubric_id)
    versions = _versions(base / rubric_id)
    if not versions:
        roots = rubric_roots(root)
        where = (
            _available(base)
            if len(roots) == 1
            else "; ".join(f"{r}: {_available(r)}" for r in roots)
        )
        raise RubricError(f"no rubric '{rubric_id}' in {base}; available: {where}")
    if version is None:
        version = versions[-1]
    elif version not in versions:
        raise RubricError(
            f"rubric '{rubric_id}' has no version {version} in {base}; "
            f"available: {rubric_id}@{','.join(map(str, versions))}"
        )
    return load_rubric_dir(base / rubric_id / f"v{version}")


def list_rubrics(root: Path | None = None) -> list[Rubric]:
    """Every version of every rubric in the rubric folders, by id then version."""
    found = [
        load_rubric_dir(child / f"v{version}")
        for base in rubric_roots(root)
        if base.is_dir()
        for child in base.iterdir()
        if _ID.match(child.name)
        for version in _versions(child)
    ]
    return sorted(found, key=lambda r: (r.id, r.version))


def _read_spec(file: Path) -> tuple[RubricSpec, bytes]:
    """Parse and validate ``rubric.yaml``; errors name the file, line or field."""
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise RubricError(f"{file}: cannot read: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise RubricError(f"{file}{where}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RubricError(f"{file}: expected a mapping of fields, got {type(data).__name__}")
    try:
        return RubricSpec.model_validate(data), raw
    except ValidationError as exc:
        problems = [
            f"{file}: field '{'.'.join(str(p) for p in err['loc']) or '(root)'}': {err['msg']}"
            for err in exc.errors()
        ]
        raise RubricError("\n".join(problems) + "\n(fix the file; see rubrics/README.md)") from exc


def load_rubric_dir(folder: Path) -> Rubric:
    """Load the rubric in ``folder`` (``.../<id>/v<N>``), checking it against its path."""
    file = folder / RUBRIC_FILE
    spec, spec_bytes = _read_spec(file)
    if spec.id != folder.parent.name:
        raise RubricError(
            f"{file}: field 'id': '{spec.id}' does not match its folder '{folder.parent.name}'"
        )
    if folder.name != f"v{spec.version}":
        raise RubricError(
            f"{file}: field 'version': {spec.version} does not match its folder '{folder.name}'"
        )
    _check_kind(spec, file)
    prompt_file = folder / spec.prompt
    try:
        prompt_bytes = prompt_file.read_bytes()
    except OSError as exc:
        raise RubricError(
            f"{file}: field 'prompt': cannot read {prompt_file}: {exc.strerror}"
        ) from exc
    try:
        template = prompt_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RubricError(
            f"{prompt_file}: not valid UTF-8 ({exc.reason} at byte {exc.start}); save the "
            "prompt template as UTF-8"
        ) from exc
    digest = bytes_digest(spec_bytes + b"\0" + prompt_bytes)
    gate_layer = _gate_layer(spec.gates, folder, file) if spec.gates is not None else None
    rubric = Rubric(spec=spec, template=template, digest=digest, path=folder, gates=gate_layer)
    rubric.system_prompt  # noqa: B018 - render once now so template errors surface at load
    return rubric


def _gate_layer(ref: str, folder: Path, file: Path) -> Rubric:
    """The rubric a ``gates`` field names: beside this one, else in the installed rubrics (a
    rubric rebuilt elsewhere, e.g. on a Ray worker, finds it there). It must declare checks."""
    try:
        try:
            gate = load_rubric(ref, folder.parent.parent)
        except RubricError:
            gate = load_rubric(ref)
    except RubricError as exc:
        raise RubricError(f"{file}: field 'gates': {exc}") from exc
    if gate.spec.checks is None:
        raise RubricError(f"{file}: field 'gates': rubric {ref} declares no checks")
    return gate


# ---------------------------------------------------------------------------------------------
# Templates.

_EVIDENCE_TAG = re.compile(r"<(/?)(evidence)\b", re.IGNORECASE)


def evidence_block(item: Mapping[str, Any]) -> str:
    """One evidence item as a delimited block; tags inside the text cannot close it."""
    attrs = {"id": item["id"], "kind": item["kind"], "source": item["source"]}
    if item.get("role"):
        attrs["role"] = item["role"]
    if item.get("flags"):
        attrs["flags"] = ",".join(item["flags"])
    head = " ".join(f'{k}="{html.escape(str(v), quote=True)}"' for k, v in attrs.items())
    text = _EVIDENCE_TAG.sub(r"&lt;\1\2", item["text"])
    return f"<evidence {head}>\n{text}\n</evidence>"


#: The mark datamarking puts in place of every run of spaces in untrusted text (spotlighting,
#: Hines et al. 2024): a character no run writes, so that what is marked is plainly data.
DATAMARK = "\u02c6"
_SPACES = re.compile(r"[ \t]+")


def marked_evidence_block(item: Mapping[str, Any]) -> str:
    """:func:`evidence_block` with the text datamarked: every run of spaces in it replaced by
    :data:`DATAMARK` (line breaks kept), so that instructions inside it read as marked data."""
    marked = {**item, "text": _SPACES.sub(DATAMARK, str(item["text"]))}
    return evidence_block(marked)


@lru_cache(maxsize=1)
def _environment() -> Any:
    """One sandboxed Jinja environment with strict undefined variables."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["evidence"] = evidence_block
    env.filters["marked_evidence"] = marked_evidence_block
    return env


def package_environment(package: str, *, keep_trailing_newline: bool = False) -> Environment:
    """The Jinja environment of the templates a package ships in its ``templates`` folder (the
    review pages of judge.api, the run-set report of judge.runsets): HTML files escaped,
    undefined variables an error, a block tag's own line and indent left out. (Rubric prompts
    are rendered in their own sandboxed environment, not this one.)"""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    return Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=keep_trailing_newline,
    )


def _split_template(template: str, where: str) -> tuple[str, str]:
    """(system part, user part) of a prompt template."""
    parts = template.split(USER_MARKER)
    if len(parts) != 2:
        raise RubricError(
            f"{where}: the prompt must contain the line '{USER_MARKER}' exactly once, "
            "between the system instructions and the per-case part"
        )
    return parts[0].strip(), parts[1].strip()


@lru_cache(maxsize=64)
def _compile(source: str) -> Any:
    """The compiled template of ``source``: compiling took ~2 ms, rendering ~0.2 ms, and every
    judgment of a rubric renders the same source. (Errors are raised, never cached.)"""
    return _environment().from_string(source)


def _render(source: str, context: Mapping[str, Any], rubric_ref: str, part: str) -> str:
    from jinja2 import TemplateError, UndefinedError

    try:
        return str(_compile(source).render(**context)).strip()
    except UndefinedError as exc:
        raise RubricError(
            f"rubric {rubric_ref}: the {part} part of the prompt uses an undefined variable: "
            f"{exc.message}; available: {sorted(context)}"
        ) from exc
    except TemplateError as exc:
        raise RubricError(f"rubric {rubric_ref}: cannot render the {part} part: {exc}") from exc


def _item_view(item: EvidenceItem, source: str | None = None) -> dict[str, Any]:
    """What a template may read of an evidence item."""
    return {
        "id": item.id,
        "kind": item.kind,
        "source": source or item.source,
        "role": item.role,
        "step": item.step,
        "text": item.text,
        "clipped": item.clipped,
        "flags": list(item.flags),
    }


# ---------------------------------------------------------------------------------------------
# The rubric.


@dataclass(frozen=True)
class Rubric:
    """A loaded, validated rubric version."""

    spec: RubricSpec
    template: str
    digest: str
    path: Path
    #: The rubric named by ``gates`` (its checks are this rubric's gate layer), if any.
    gates: Rubric | None = field(default=None, repr=False, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def checks(self) -> ChecksSpec | None:
        """The checks run before the model: this rubric's own, or its gate layer's."""
        return self.gates.spec.checks if self.gates is not None else self.spec.checks

    @property
    def checks_version(self) -> int:
        """The version of the rubric that declares :attr:`checks` (its contracts' version)."""
        return self.gates.version if self.gates is not None else self.version

    @property
    def id(self) -> str:
        """The rubric id (its folder name)."""
        return self.spec.id

    @property
    def version(self) -> int:
        """The version number (its ``v<N>`` folder)."""
        return self.spec.version

    @property
    def kind(self) -> RubricKind:
        """binary, pairwise or multi-criterion."""
        return self.spec.kind

    @property
    def ref(self) -> str:
        """``id@version``."""
        return f"{self.id}@{self.version}"

    @property
    def labels(self) -> list[str]:
        """The rubric's labels, without the abstain label."""
        return list(self.spec.labels)

    @property
    def all_labels(self) -> list[str]:
        """The labels a judge may answer with: the rubric's, then the abstain label."""
        return [*self.spec.labels, ABSTAIN_LABEL]

    def _rubric_context(self) -> dict[str, Any]:
        criteria = [c.model_dump() for c in self.spec.criteria]
        return {
            "rubric": {
                "id": self.id,
                "version": self.version,
                "kind": self.kind,
                "title": self.spec.title,
                "description": self.spec.description,
            },
            "labels": self.labels,
            "all_labels": self.all_labels,
            "abstain_label": ABSTAIN_LABEL,
            "criteria": criteria,
            "criterion_labels": list(CRITERION_LABELS),
            "rationale_max_chars": RATIONALE_MAX_CHARS,
            "max_citations": self.spec.max_citations,
            "invariants": [i.model_dump() for i in self.spec.invariants],
            "owners": list(OWNERS),
        }

    @property
    def system_prompt(self) -> str:
        """The system message: the rubric's instructions, the same for every case."""
        if "system" not in self._cache:
            system, _ = _split_template(self.template, str(self.path / self.spec.prompt))
            self._cache["system"] = _render(system, self._rubric_context(), self.ref, "system")
        return str(self._cache["system"])

    @property
    def n_variants(self) -> int:
        """How many prompt variants a case is judged with (1 when the rubric declares none)."""
        return max(1, len(self.spec.variants))

    def render(
        self, case: Case, evidence: EvidenceSet, order: Order | None = None, variant: int = 0
    ) -> list[dict[str, str]]:
        """The chat messages for judging ``case`` on ``evidence``.

        Only the evidence reaches the template (never the case's id, slices, meta or agent
        model). For pairwise rubrics, ``order="BA"`` shows canonical B as "Response A".
        ``variant`` picks one of the rubric's prompt variants.
        """
        if not 0 <= variant < self.n_variants:
            raise RubricError(
                f"rubric {self.ref} has {self.n_variants} prompt variant(s); "
                f"variant {variant} does not exist"
            )
        _, user = _split_template(self.template, str(self.path / self.spec.prompt))
        context = self._rubric_context()
        context.update(self._case_context(case, evidence, order))
        context["variant"] = self.spec.variants[variant] if self.spec.variants else ""
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": _render(user, context, self.ref, "user")},
        ]

    def _case_context(
        self, case: Case, evidence: EvidenceSet, order: Order | None
    ) -> dict[str, Any]:
        if not kinds.kind(self.kind).swap and order is not None:
            raise RubricError(
                f"rubric {self.ref} is {self.kind}: an answer order applies only "
                "to pairwise rubrics"
            )
        task = next((i for i in evidence.items if i.kind == "task"), None)
        by_source = {i.source: i for i in evidence.items if i.kind == "candidate"}
        candidates: list[dict[str, Any]] = []
        if kinds.kind(self.kind).must_show == "candidates":
            if set(by_source) != {"candidate:A", "candidate:B"}:
                raise RubricError(
                    f"rubric {self.ref} needs both candidates in the evidence of case "
                    f"{case.id!r}; select evidence with visible including 'candidates'"
                )
            shown = ("B", "A") if order == "BA" else ("A", "B")
            for label_shown, canonical in zip(("A", "B"), shown, strict=True):
                view = _item_view(by_source[f"candidate:{canonical}"], f"response-{label_shown}")
                candidates.append({"label": label_shown, "item": view})
        rest = [_item_view(i) for i in evidence.items if i.kind not in ("task", "candidate")]
        context: dict[str, Any] = {
            "task": _item_view(task) if task is not None else None,
            "candidates": candidates,
            "evidence": rest,
            "n_dropped": len(evidence.dropped),
        }
        if kinds.kind(self.kind).steps:
            # What the checks propose (written by the checks, with no text of the run).
            context["checks"] = [
                {"id": f"E{c.step + 1}", "invariant": c.invariant, "reason": c.reason}
                for c in candidate_steps(case.trace)
            ]
        return context

    def answer_model(self) -> type[BaseModel]:
        """The structured answer a judge must return (``verdict`` is the first key)."""
        if kinds.kind(self.kind).steps:
            invariants = tuple(i.id for i in self.spec.invariants)
            return diagnosis_model(self.ref, tuple(self.all_labels), invariants)
        with_criteria = kinds.kind(self.kind).criteria
        criteria = tuple(c.id for c in self.spec.criteria) if with_criteria else ()
        return answer_model(self.ref, tuple(self.all_labels), criteria, self.spec.max_citations)

    def interpret(
        self,
        answer: BaseModel,
        *,
        shown_ids: Sequence[str],
        order: Order | None,
        label_probs: Mapping[str, float] | None,
    ) -> Verdict:
        """Map a judge's answer from the frame shown into the canonical verdict.

        Pairwise order BA swaps A and B back (``label_shown`` keeps what the judge said);
        citations are split into valid and invalid ones; for multi-criterion rubrics a failed
        hard gate makes the verdict "fail" whatever the overall answer said. The confidence is
        the probability of the final label (None without probabilities).
        """
        data = answer.model_dump()
        if "verdict" not in data:
            raise RubricError(f"rubric {self.ref}: the answer has no verdict: {data!r}")
        if kinds.kind(self.kind).steps:
            return diagnosis_verdict(data, shown_ids, label_probs)
        label_shown = str(data["verdict"])
        spec = kinds.kind(self.kind)
        swap = order == "BA" and bool(spec.swap)
        label = spec.swapped(label_shown) if swap else label_shown
        probs = None
        if label_probs is not None:
            probs = {(spec.swapped(k) if swap else k): float(v) for k, v in label_probs.items()}
        cited, invalid = check_citations(data.get("evidence") or [], shown_ids)
        criteria, failed = self._criteria_verdicts(data.get("criteria") or [], shown_ids, invalid)
        if failed:
            label = "fail"
        return Verdict(
            label=label,
            label_shown=label_shown,
            label_probs=probs,
            confidence=probs.get(label) if probs is not None else None,
            cited=cited,
            invalid_citations=invalid,
            rationale=str(data.get("rationale") or ""),
            criteria=criteria,
            failed_hard_gates=failed,
        )

    def _criteria_verdicts(
        self, answers: Sequence[Mapping[str, Any]], shown_ids: Sequence[str], invalid: list[str]
    ) -> tuple[list[CriterionVerdict], list[str]]:
        """Criterion verdicts in rubric order, and the hard gates that failed."""
        if not kinds.kind(self.kind).criteria:
            return [], []
        by_id = {str(a["id"]): a for a in reversed(answers)}  # first answer per id wins
        verdicts: list[CriterionVerdict] = []
        failed: list[str] = []
        for spec in self.spec.criteria:
            answer = by_id.get(spec.id)
            if answer is None:
                continue
            cited, bad = check_citations(answer.get("evidence") or [], shown_ids)
            invalid.extend(b for b in bad if b not in invalid)
            label = str(answer["verdict"])
            verdicts.append(
                CriterionVerdict(id=spec.id, label=label, hard_gate=spec.hard_gate, cited=cited)
            )
            if spec.hard_gate and label == "fail":
                failed.append(spec.id)
        return verdicts, failed
