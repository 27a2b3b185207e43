"""DEPLOY.md's pieces that need no server: the systemd unit's `judge serve` line parses with
the options judge serve has, and every JUDGE_* variable the code reads is in its table.
(tests/judge/api/test_deploy.py runs its nginx block, its job body and a killed replica;
tests/test_install_lines.py its install block.)"""

from __future__ import annotations

import re
import shlex

from judge.commands.serve import serve
from tests.conftest import REPO

DEPLOY = (REPO / "DEPLOY.md").read_text(encoding="utf-8")


def _fenced(marker: str, language: str) -> str:
    found = re.search(rf"<!-- {marker} -->\s*```{language}\n(.*?)```", DEPLOY, re.S)
    assert found is not None, f"no ```{language} block after <!-- {marker} -->"
    return found.group(1)


def test_the_systemd_units_command_is_a_valid_judge_serve() -> None:
    unit = _fenced("systemd", "ini")
    (exec_start,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    argv = shlex.split(exec_start.removeprefix("ExecStart="))
    assert argv[0].endswith("/bin/judge") and argv[1] == "serve"
    context = serve.make_context("serve", argv[2:])  # raises on an unknown option or value
    assert context.params["trusted_proxies"] == ("10.0.0.5",)
    assert context.params["public_url"] == "https://judge.example.org"
    assert context.params["max_body_mb"] == 5.0
    for needed in ("Restart=always", "KillSignal=SIGTERM", "EnvironmentFile="):
        assert needed in unit
    # The nginx block's body limit is above judge's, so that judge's JSON 413 answers.
    nginx = _fenced("nginx", "nginx")
    (limit,) = re.findall(r"client_max_body_size (\d+)m;", nginx)
    assert int(limit) > context.params["max_body_mb"]


def test_every_variable_the_code_reads_is_documented() -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "judge").rglob("*.py"))
    read = set(re.findall(r'"(JUDGE_(?:DB|JOB|CALL|REPLICA|SECRET)[A-Z_]*)"', code))
    assert {"JUDGE_REPLICA_DEAD_S", "JUDGE_SECRET_GRACE_S"} <= read
    table = set(re.findall(r"^\| `(JUDGE_[A-Z_]+)` \|", DEPLOY, re.M))
    assert read <= table, sorted(read - table)
