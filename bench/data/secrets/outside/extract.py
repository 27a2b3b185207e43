"""Extract the false-positive fixtures of gitleaks' rule tests into ``gitleaks_fps.jsonl``.

    python bench/data/secrets/outside/extract.py DIR COMMIT

DIR holds gitleaks' ``cmd/generate/config/rules/*.go`` (a checkout of github.com/gitleaks/gitleaks
at COMMIT). Every ``fps := []string{...}`` or ``fps := map[string]string{...}`` literal of those
files is a list of texts gitleaks' authors wrote as not secrets; each item made only of Go
string literals (``"..."``, raw strings, joined by ``+``) is kept, items that call a function
(generated samples) are skipped. Nobody on this project chose them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

TOKEN = re.compile(r'`[^`]*`|"(?:[^"\\\n]|\\.)*"|//[^\n]*|[{}(),:+]|[^\s{}(),:+`"]+', re.S)


def _go_string(token: str) -> str:
    if token.startswith("`"):
        return token[1:-1]
    return str(json.loads(token.replace("\\'", "'")))


def items(source: str) -> list[str]:
    """The literal items of every ``fps`` block in ``source``."""
    found: list[str] = []
    for start in re.finditer(r"fps\s*:?=\s*(?:\[\]string|map\[string\]string)\{", source):
        depth, item, literal = 1, "", True
        is_map = "map[" in start.group(0)
        key = False
        for m in TOKEN.finditer(source, start.end()):
            tok = m.group(0)
            if tok.startswith("//"):
                continue
            if tok in "({":
                depth += 1
                literal = False
            elif tok in ")}":
                depth -= 1
                if depth == 0:
                    if item and literal:
                        found.append(item)
                    break
            elif depth == 1 and tok == ",":
                if item and literal:
                    found.append(item)
                item, literal, key = "", True, False
            elif depth == 1 and tok == ":" and is_map:
                item, literal, key = "", True, True  # the map's key is a path: keep the value
            elif tok == "+":
                continue
            elif tok[0] in '`"':
                try:
                    item += _go_string(tok)
                except ValueError:
                    literal = False
            else:
                literal = False
        del key
    return found


def main() -> None:
    root, commit = Path(sys.argv[1]), sys.argv[2]
    out = Path(__file__).resolve().parent / "gitleaks_fps.jsonl"
    rows = []
    for path in sorted((root / "cmd/generate/config/rules").glob("*.go")):
        for i, text in enumerate(items(path.read_text("utf-8"))):
            rows.append({"source": f"{path.name}#{i}", "text": text})
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    print(f"{len(rows)} look-alikes from gitleaks {commit}")


if __name__ == "__main__":
    main()
