"""The registry of checks: id -> check, in the order they run. A new check is one entry in its
module's ``CHECKS`` tuple, and its cases in ``judge/checks/suites/``."""

from __future__ import annotations

from judge.checks import config, evasion, integrity, receipt, testcode, trace
from judge.checks.base import Check

CHECKS: dict[str, Check] = {
    check.id: check
    for module in (testcode, config, integrity, evasion, trace, receipt)
    for check in module.CHECKS
}
