"""Plugins the Python way: entry points of installed packages.

A package adds trace importers, rubric folders or platform connectors by declaring entry points,
as the built-in ones are declared in judge's own pyproject.toml::

    [project.entry-points."judge.importers"]
    my-format = "my_package.traces:MyImporter"      # a class (or instance) with load/sniff

    [project.entry-points."judge.rubrics"]
    my-rubrics = "my_package:RUBRICS"              # a folder of <id>/v<N>/ rubric folders

    [project.entry-points."judge.connectors"]
    my-platform = "my_package.platform:MyConnector"  # my-platform+https://HOST/...

Each group is read once per process, in entry-point name order.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from typing import Any

from judge.errors import JudgeError

#: The groups judge reads.
IMPORTERS = "judge.importers"
RUBRICS = "judge.rubrics"
#: Platform connectors (judge.connectors.platform): the scheme of a target URL names one.
CONNECTORS = "judge.connectors"


class PluginError(JudgeError):
    """An installed plugin cannot be loaded (names the plugin and its package)."""


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of ``group``, by name."""
    return sorted(metadata.entry_points(group=group), key=lambda ep: ep.name)


@cache
def load_group(group: str) -> tuple[tuple[str, Any], ...]:
    """(name, loaded object) of every entry point of ``group``; a plugin that fails to load is
    an error naming it and its package, not a silent gap."""
    loaded = []
    for ep in entry_points(group):
        try:
            loaded.append((ep.name, ep.load()))
        except Exception as err:  # noqa: BLE001 - any import failure of a plugin is reported
            package = ep.dist.name if ep.dist is not None else "an unknown package"
            raise PluginError(
                f"the {group} plugin {ep.name!r} ({ep.value}, from {package}) cannot be "
                f"loaded: {err!r}; reinstall or uninstall that package"
            ) from err
    return tuple(loaded)


def load_named(group: str, kind: type[Any], needs: str) -> dict[str, Any]:
    """name -> plugin of every entry point of ``group`` (a class is instantiated; its name is the
    entry point's); one that is not a ``kind`` is an error: "the GROUP plugin NAME is not
    ``needs``" (``kind``: a runtime-checkable protocol with a ``name``)."""
    found: dict[str, Any] = {}
    for name, obj in load_group(group):
        instance = obj() if isinstance(obj, type) else obj
        if not isinstance(instance, kind):
            raise PluginError(f"the {group} plugin {name!r} is not {needs}")
        instance.name = name
        found[name] = instance
    return found
