"""judge: a calibrated LLM-as-judge service for evaluating AI agents.

The public API is declared once, in ``judge/__init__.pyi``: type checkers read it as the
package's interface, and this module reads it to load each name from its module on first use,
so that ``import judge`` and ``judge --help`` stay cheap::

    import judge

    with judge.open_store("judge.db") as store:
        summary = judge.judge_cases(store, judge.load_cases("runs.jsonl").cases,
                                    rubric="agent-run-success@2", models=["openai/gpt-4o"])
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

from judge.version import __version__ as __version__


def _api(stub: Path) -> dict[str, str]:
    """name -> module, from the stub's ``from MODULE import NAME as NAME`` lines."""
    found: dict[str, str] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


_API = _api(Path(__file__).with_name("__init__.pyi"))
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    """A name of the public API, imported from its module on first use."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
