"""The registry of checks: id -> check, in the order they run. A new check is one entry in its
module's ``CHECKS`` tuple, and its suites in ``judge/checks/suites/<id>.jsonl``."""

from __future__ import annotations

from judge.checks import integrity, testcode
from judge.checks.base import Check

CHECKS: dict[str, Check] = {
    check.id: check for module in (testcode, integrity) for check in module.CHECKS
}
