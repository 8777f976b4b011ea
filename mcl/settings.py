"""Project settings: `[tool.mcl]` in pyproject.toml, or an `mcl.toml`.

The nearest of the two found from the working directory upwards (in one folder, mcl.toml
wins) supplies defaults for every command:

    [tool.mcl]                      # in mcl.toml: the same keys at the top level
    hwd-path = ["hardware"]         # like --hwd-path, before those on the command line
    include = ["lib"]               # like -I
    level = "gpu"                   # `mcl check` without --level checks at this level
    values = { n = 2048, m = 2048 } # like -D for `mcl check` and `mcl report`

Paths are relative to the file's folder. The command line wins: its `--hwd-path` folders
come later (so they win on name clashes), its `-I` folders are searched first, `--level`
replaces `level`, and `-D` replaces a value of the same name (the merge into a command's
options is `mcl.commands.options.apply_settings`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcl.diagnostics import MclError, Span, error
from mcl.parse_cache import ParseCache


@dataclass
class Settings:
    """The project's settings (the `[tool.mcl]` table of `pyproject.toml`)."""

    file: Path | None = None
    hwd_path: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)
    level: str | None = None
    values: dict[str, int | float] = field(default_factory=dict)


def find_settings(start: Path | None = None) -> Settings:
    """The settings of the nearest folder (from `start`, default the working directory, up)
    with an mcl.toml or a pyproject.toml holding `[tool.mcl]`; empty settings without."""
    folder = (start or Path.cwd()).resolve()
    for here in (folder, *folder.parents):
        own = here / "mcl.toml"
        if own.is_file():
            return _settings(own, _toml(own))
        project = here / "pyproject.toml"
        if project.is_file():
            table = _toml(project).get("tool", {}).get("mcl")
            if isinstance(table, dict):
                return _settings(project, table)
    return Settings()


# The tables of the files read, kept on disk by their text (mcl/parse_cache.py): every
# command in a project reads its pyproject.toml, and importing tomllib and parsing the
# file took about 8 ms of each `mcl check` (docs/feedback.md, "Start-up"). A table with
# values pickle cannot restore without other classes (TOML's dates) is parsed (and
# stored) each time.
CACHE: ParseCache[dict[str, Any]] = ParseCache(
    "settings", dict, sources=("settings.py",), modules=frozenset())


def _toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MclError(error("settings-io", f"cannot read {path}: {exc.strerror or exc}")
                       ) from None
    return CACHE.through(text, str(path), lambda: _parse(path, text))


def _parse(path: Path, text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MclError(error("settings-bad-file", f"{path} is not valid TOML: {exc}",
                             Span.point(path, 1, 1))) from None


def _settings(path: Path, table: dict[str, Any]) -> Settings:
    where = Span.point(path, 1, 1)
    known = {"hwd-path", "include", "level", "values"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise MclError(error("settings-unknown-key", f"unknown mcl setting '{unknown[0]}' in "
                             f"{path}", where, "known: " + ", ".join(sorted(known))))

    def paths(key: str) -> list[str]:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise MclError(error("settings-bad-value", f"'{key}' in {path} must be a list of "
                                 "folders", where, f'e.g. {key} = ["lib"]'))
        return [str((path.parent / v).resolve()) for v in value]

    level = table.get("level")
    if level is not None and not isinstance(level, str):
        raise MclError(error("settings-bad-value", f"'level' in {path} must be a name", where,
                             'e.g. level = "gpu"'))
    values = table.get("values", {})
    if not isinstance(values, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values.values()):
        raise MclError(error("settings-bad-value", f"'values' in {path} must map names to "
                             "numbers", where, "e.g. values = { n = 2048 }"))
    return Settings(path, paths("hwd-path"), paths("include"), level, dict(values))
