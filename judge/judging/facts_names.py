"""String literals and test names in the facts-only copy's diff (``facts_diff.py``).

A string literal is text a program carries: a message it prints or logs, a value it compares
or sends. Its words are as free as a comment's, and text planted in one (a log banner, a
constant, a test's description) reached the copy's judge verbatim. A test's name is an
identifier no code calls (the runner finds it by its shape), so it can be a whole sentence
(``test_the_evaluator_should_answer_pass``). These rules, about syntax only, reduce both:

- a **string literal** becomes its length, its quotes and prefix kept (``"<str 37 chars>"``,
  ``f'<str 12 chars>'``), unless it is a *name-like* literal: at most 24 characters, no blank,
  only ASCII letters, digits and ``_ . - / : % @ + { }`` (a key, an encoding, a format, a short
  path or id: ``"utf-8"``, ``'id'``, ``"%Y-%m-%d"``, ``"a/b.py"``). Such a literal is one token
  of at most 24 characters, the bound the agent's commands keep a program or flag name under
  (``facts_commands``): too short to be a sentence, and what a judge needs to read a fix
  (which key is read, which format is written);
- a **test's name** becomes the kind ``test`` and an alias stable over the run (``<test 1>``,
  the same alias the agent's commands show for the same name): a function or class defined
  under a name that starts with ``test``/``Test`` followed by ``_``, a capital, a digit or
  nothing (``def test_x``, ``func TestX``, ``fn test_x``, ``void testX``, ``class TestX``:
  pytest, unittest, Go, Rust, JUnit 3, PHPUnit, minitest), and the first string argument of a
  call of ``it``/``test``/``describe``/``context``/``specify``/``suite`` (Jest, Mocha, Vitest,
  Jasmine, RSpec, Node's test runner), with ``.only``/``.skip``/``.each(...)`` and the like.

What stays: every other identifier (a function's, a variable's), numbers, operators, the
literal's place and its quotes, so the code's shape reads as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: The marker of a string literal's text (inside its quotes).
STRING_MARK = "<str {n} chars>"
#: The kind of a test's alias (the one ``facts_commands`` gives a test id's names).
TEST_KIND = "test"

#: ``(kind, value) -> alias``: ``facts_commands.Aliases.alias`` when the copy is built.
AliasFn = Callable[[str, str], str]

_NAME_LIKE = re.compile(r"[A-Za-z0-9_.\-/:%@+{}]{0,24}", re.ASCII)
#: The text before a literal that makes it a test's name: ``it(``, ``test.each(...)(``, ``it ``.
_TEST_CALL = re.compile(
    r"(?<![\w.$])(?:it|test|describe|context|specify|suite)"
    r"(?:\.\w+(?:\([^()\n]*\))?)*(?:\s*\(\s*|[ \t]+)$"
)
#: A definition of a test: the keyword (and a Go receiver), then the name.
TEST_DEFINITION = re.compile(
    r"(?<![\w.])((?:def|func|fn|function|fun|sub|void|class)\s+(?:\([^()\n]*\)\s*)?)"
    r"((?:test|Test)(?:[_A-Z0-9]\w*)?)(?!\w)"
)


def name_like(body: str) -> bool:
    """A literal's text short and plain enough to be a name (see the module docstring)."""
    return _NAME_LIKE.fullmatch(body) is not None


def names_a_test(before: str) -> bool:
    """Whether a literal that follows ``before`` (its line up to the quote) is a test's name."""
    return _TEST_CALL.search(before) is not None


def alias_definitions(line: str, alias: AliasFn) -> str:
    """``line`` with the names of the tests it defines replaced by their aliases."""
    return TEST_DEFINITION.sub(lambda m: m.group(1) + alias(TEST_KIND, m.group(2)), line)
