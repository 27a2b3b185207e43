"""Each option is declared once, so that the interfaces cannot drift apart.

The judging options are ``judge.JudgeOptions``' fields with a help text: ``judge run``,
``judge score`` and ``judge demo`` offer each with that default and help, and the API's request
fields take their defaults and descriptions from it (and map to JudgeOptions in one place).
``judge calibrate`` and ``judge compare`` take their defaults from their option models. A
default changed in one place is changed everywhere; a command that sets its own fails here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

import click
import pytest
from click.testing import CliRunner

import judge
import judge.judging
import judge.runsets
from calibration.confidence import CALIBRATORS
from calibration.options import CalibrationOptions, CompareOptions
from judge.api import schemas
from judge.cli import cli, main
from judge.commands.calibrate import STEP_KINDS
from judge.commands.judging_options import ENGINE_OPTIONS
from judge.defaults import DEFAULT_MODEL, DEFAULT_PROTOCOLS
from judge.errors import InputError
from judge.service import CALLER_OPTIONS, JudgeSettings
from tests.conftest import DATA
from tests.review_fixtures import make_case

OFFERED = judge.JudgeOptions.offered()
JUDGING_COMMANDS = ("run", "score", "demo")
RUNS = DATA / "runsets" / "small.jsonl"


def _params(name: str) -> dict[str, click.Parameter]:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    names = [p.name for p in command.params]
    assert len(names) == len(set(names)), f"judge {name} declares an option twice"
    return {p.name: p for p in command.params if p.name is not None}


def test_the_offered_options_are_the_judging_options_with_their_defaults() -> None:
    assert list(OFFERED) == [
        "orders",
        "samples",
        "variants",
        "temperature",
        "max_tokens",
        "api_base",
        "token_budget",
        "concurrency",
    ]
    defaults = judge.JudgeOptions()
    for option in OFFERED.values():
        assert getattr(defaults, option.name) == option.default
        assert option.help
    # judge demo judges by the default protocol: the defaults are that protocol.
    protocol = judge.JudgeOptions.from_protocol(DEFAULT_PROTOCOLS["agent_run"])
    assert protocol.params() == defaults.params()
    assert (protocol.orders, protocol.samples, protocol.variants) == (
        defaults.orders,
        defaults.samples,
        defaults.variants,
    )


def test_the_server_runs_as_many_judgments_at_once_as_judge_run() -> None:
    # judge serve used to run the embedded model four at a time (--concurrency default=4).
    (param,) = [p for p in _params("serve").values() if p.name == "concurrency"]
    assert param.default == OFFERED["concurrency"].default is None
    assert isinstance(param, click.Option) and param.help == OFFERED["concurrency"].help
    assert JudgeSettings(models=(DEFAULT_MODEL,)).options({}).in_flight([DEFAULT_MODEL]) == 1


@pytest.mark.parametrize("name", JUDGING_COMMANDS)
def test_every_judging_command_offers_every_option_with_its_one_default(name: str) -> None:
    params = _params(name)
    for option in OFFERED.values():
        param = params[option.name]
        assert param.default == option.default, (name, option.name)
        assert isinstance(param, click.Option) and param.help == option.help
    assert set(ENGINE_OPTIONS) <= set(params)


@pytest.mark.parametrize("schema", [schemas.JudgeRequest, schemas.JobRequest])
def test_the_api_request_fields_take_their_defaults_from_judge_options(
    schema: type[schemas.JudgeOptions],
) -> None:
    assert set(schema.model_fields) & set(OFFERED) == set(CALLER_OPTIONS)
    for name in CALLER_OPTIONS:
        field = schema.model_fields[name]
        assert field.default == OFFERED[name].default, name
        assert field.description == OFFERED[name].help


def test_a_request_maps_to_judge_options_in_one_place() -> None:
    settings = JudgeSettings(models=("openai/x",), api_base="http://h/v1", concurrency=3)
    server: dict[str, Any] = {"api_base": "http://h/v1", "concurrency": 3}
    plain = schemas.JobRequest(cases=[make_case(1)])
    assert settings.options(plain.judging_params()) == judge.JudgeOptions(**server)
    asked = schemas.JudgeRequest(
        case=make_case(1), orders="one", samples=3, temperature=0.5, max_tokens=100
    )
    params = asked.judging_params()
    assert params == {"orders": "one", "samples": 3, "temperature": 0.5, "max_tokens": 100}
    assert settings.options(params) == judge.JudgeOptions(
        orders="one", samples=3, temperature=0.5, max_tokens=100, **server
    )
    # A job's stored parameters: what is missing is JudgeOptions' default.
    assert settings.options({"samples": 2}) == judge.JudgeOptions(samples=2, **server)


class _Stop(Exception):
    pass


def _capture(monkeypatch: pytest.MonkeyPatch, package: ModuleType, function: str) -> dict[str, Any]:
    """Replace ``package.function`` (the library verb a command calls) by one that records its
    keyword arguments and stops."""
    seen: dict[str, Any] = {}

    def fake(*args: Any, **kwargs: Any) -> None:
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(package, function, fake)
    return seen


@pytest.mark.parametrize("name", JUDGING_COMMANDS)
def test_the_embedded_model_runs_one_judgment_at_a_time_in_every_command(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # judge score used to run it four at a time (--concurrency default=4 of its own).
    weights = tmp_path / "own.gguf"
    weights.write_bytes(b"GGUF")  # no weights are loaded: the judging call is replaced
    model = f"local/gguf:{weights}"
    args = {
        "run": ["run", str(_cases(tmp_path)), "--rubric", "agent-run-success@2"],
        "score": ["score", str(RUNS), "--rubric", "agent-run-success@2"],
        "demo": ["demo", "--limit", "1", "--out", str(tmp_path / "demo")],
    }[name]
    seen = (
        _capture(monkeypatch, judge.runsets, "score_runs")
        if name == "score"
        else _capture(monkeypatch, judge.judging, "judge_cases")
    )
    quiet = [] if name == "demo" else ["--quiet"]
    result = CliRunner().invoke(
        cli, [*args, "--model", model, "--db", str(tmp_path / "j.db"), *quiet]
    )
    assert isinstance(result.exception, _Stop), result.output
    options = seen["judge_options" if name == "score" else "options"]
    assert options == judge.JudgeOptions(prepare_workers=None)
    assert options.in_flight([model]) == 1
    assert options.in_flight(["openai/gpt-4o"]) == judge.judging.DEFAULT_CONCURRENCY
    assert options.in_flight([DEFAULT_MODEL]) == 1


def _cases(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(make_case(1).model_dump_json() + "\n")
    return path


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (
            ["run", "in.jsonl", "--rubric", "agent-run-success@2", "--samples", "0"],
            "samples",
            "at least 1",
        ),
        (["score", str(RUNS), "--gold-labels", "--k", "0"], "ks", "at least 1"),
        (["score", str(RUNS), "--model", "openai/x"], "models", "needs a rubric"),
        (
            ["score", str(RUNS), "--gold-labels", "--model", "openai/x"],
            "gold_labels",
            "uses no judge",
        ),
        (
            [
                "score",
                str(RUNS),
                "--rubric",
                "agent-run-success@2",
                "--model",
                "openai/x",
                "--correct-for-judge",
            ],
            "card",
            "needs the judge's card",
        ),
    ],
)
def test_the_library_checks_what_the_commands_are_given(
    args: list[str], field: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    db = tmp_path / "j.db"
    out = ["--out-dir", str(tmp_path / "report")] if args[0] == "score" else []
    result = CliRunner().invoke(cli, [*args, *out, "--db", str(db)])
    assert isinstance(result.exception, InputError), result.output
    assert result.exception.field == field and message in str(result.exception)
    assert not db.exists() and not (tmp_path / "report").exists()


def test_a_refused_option_exits_2_with_the_library_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["judge", "score", str(RUNS), "--gold-labels", "--k", "0"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    assert (
        "error: field 'ks': each k of pass@k must be at least 1, got 0" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("command", "model"),
    [("calibrate", judge.CalibrationOptions), ("compare", judge.CompareOptions)],
)
def test_calibrate_and_compare_take_their_defaults_from_their_option_models(
    command: str, model: type[Any]
) -> None:
    params = _params(command)
    for name, field in model.model_fields.items():
        assert name in params, name
        default = field.get_default(call_default_factory=True)
        if name == "costs":  # --cost NAME=COST, parsed into the model's dict
            continue
        assert params[name].default == default, name


def _command(path: str) -> click.Command:
    """A command or subcommand by its words (``"drift check"``)."""
    command: click.Command | None = cli
    for word in path.split():
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), word)
    assert command is not None
    return command


def _every_command(group: click.Group = cli, path: str = "") -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        assert command is not None
        yield f"{path} {name}".strip(), command
        if isinstance(command, click.Group):
            yield from _every_command(command, f"{path} {name}")


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("probe", {"orders", "variants", "api_base", "token_budget", "concurrency"}),
        ("drift check", {"variants", "api_base", "token_budget", "concurrency"}),
        ("serve", {"api_base", "concurrency"}),
    ],
)
def test_commands_that_offer_some_judging_options_take_them_from_judge_options(
    path: str, names: set[str]
) -> None:
    params = {p.name: p for p in _command(path).params}
    assert set(params) & set(OFFERED) == names
    for name in names:
        param = params[name]
        assert isinstance(param, click.Option)
        assert (param.default, param.help) == (OFFERED[name].default, OFFERED[name].help), name
        assert param.opts == ["--" + name.replace("_", "-")]


def test_every_judging_option_has_one_help_text_in_every_command() -> None:
    seen: dict[str, set[str | None]] = {}
    for _, command in _every_command():
        for param in command.params:
            if isinstance(param, click.Option) and param.name in OFFERED:
                seen.setdefault(param.name, set()).add(param.help)
    assert seen["concurrency"] == {OFFERED["concurrency"].help}
    assert seen["api_base"] == {OFFERED["api_base"].help}
    assert all(helps == {OFFERED[name].help} for name, helps in seen.items()), seen


@pytest.mark.parametrize(
    ("command", "model"),
    [("calibrate", CalibrationOptions), ("compare", CompareOptions)],
)
def test_calibrate_and_compare_take_their_choices_from_their_literals(
    command: str, model: type[Any]
) -> None:
    params = _params(command)
    literal = 0
    for name, field in model.model_fields.items():
        hint = field.annotation
        if get_origin(hint) in (Union, UnionType):
            (hint,) = (a for a in get_args(hint) if a is not type(None))
        if get_origin(hint) is not Literal:
            continue
        literal += 1
        param = params[name]
        assert isinstance(param.type, click.Choice), name
        # --kind also takes the step-score kinds, declared once beside the command.
        extra = STEP_KINDS if (command, name) == ("calibrate", "kind") else ()
        assert list(param.type.choices) == [*get_args(hint), *extra], name
    assert literal == {"calibrate": 5, "compare": 1}[command]


def test_the_calibrators_offered_are_the_registered_ones() -> None:
    param = _params("calibrate")["calibrator"]
    assert isinstance(param.type, click.Choice)
    assert list(param.type.choices) == ["none", *CALIBRATORS]


def _help_texts(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(command path, help page) for every command and subcommand of ``group``."""
    ctx = click.Context(group, info_name="judge")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        words = (*path, name)
        sub = click.Context(command, info_name=" ".join(words), parent=ctx)
        yield " ".join(words), command.get_help(sub)
        if isinstance(command, click.Group):
            yield from _help_texts(command, words)


def test_no_help_page_shows_docstring_markup() -> None:
    """A command's docstring is its help page: reST markup (double backticks, ``:func:``) is
    printed as typed, so help texts are written in plain words."""
    shown = [
        f"judge {name}: {line.strip()}"
        for name, page in _help_texts(cli)
        for line in page.splitlines()
        if "``" in line or ":func:" in line or ":class:" in line
    ]
    assert shown == []
