"""Benign text in about 100 languages: the translation catalogues of Django (BSD-3-Clause).

    strings = catalogue_strings()  # {"de": ["Bitte korrigieren Sie ...", ...], ...}

Software strings in another language are where a multilingual injection detector goes wrong:
an i18n catalogue is full of imperatives addressed to a reader ("Please correct the errors
below", "Enter a valid value"), and catalogues were the false flags of the multilingual model
(RELIABILITY.md section 4). Django's wheel ships its ``.po`` catalogues for 99 locales; the
wheel is fetched from the package index once (``pip download``, pinned) into
``~/.cache/judge-bench`` and read in place (its licence notice travels inside it: ``LICENSE``).
No record is written into the repository.

The translated strings are returned by language (``pt_BR`` -> ``pt``), so that a
cross-validation can hold whole languages out.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

#: The pinned wheel (its catalogues are the data; a new version is a new data set).
DJANGO = "django==5.2.19"
CACHE = Path.home() / ".cache" / "judge-bench"


def wheel(cache: Path = CACHE) -> Path:
    """The Django wheel, downloaded once."""
    found = sorted(cache.glob("[Dd]jango-5.2.19-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", DJANGO, "--no-deps", "-q", "-d", str(cache)],
        check=True,
    )
    return sorted(cache.glob("[Dd]jango-5.2.19-*.whl"))[0]


def language(locale: str) -> str:
    """``pt_BR`` -> ``pt``, ``zh_Hans`` -> ``zh``, ``sr_Latn`` -> ``sr``."""
    return locale.split("_")[0].lower()


def _msgstrs(text: str) -> list[str]:
    """The translated strings of a ``.po`` file (continuation lines joined)."""
    out: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("msgstr"):
            current = [line.split(" ", 1)[1].strip().strip('"')] if " " in line else []
            out.append("")
        elif line.startswith('"') and current is not None:
            current.append(line.strip().strip('"'))
        else:
            if current is not None and out:
                out[-1] = "".join(current).replace("\\n", "\n").replace('\\"', '"')
            current = None
    return [s for s in out if len(s) >= 12]


def catalogue_strings(path: Path | None = None) -> dict[str, list[str]]:
    """The translated strings of every catalogue, by language (``pt_BR`` and ``pt`` together),
    de-duplicated and sorted; English left out."""
    found: dict[str, set[str]] = {}
    with zipfile.ZipFile(path or wheel()) as archive:
        for name in sorted(archive.namelist()):
            if not name.endswith(".po") or "/locale/" not in name:
                continue
            lang = language(name.split("/locale/")[1].split("/")[0])
            if lang != "en":
                text = archive.read(name).decode("utf-8", "replace")
                found.setdefault(lang, set()).update(_msgstrs(text))
    return {lang: sorted(strings) for lang, strings in sorted(found.items())}
