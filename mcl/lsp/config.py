"""The settings a document is analysed with: the client's `mcl.*` settings over the
project's `mcl.toml` / `[tool.mcl]` (mcl.settings), as on the command line, where the
command line wins over the project file (docs/editor.md, "Settings")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcl.diagnostics import MclError
from mcl.settings import Settings, find_settings

# No pause by default: edits that arrive while a check runs are coalesced (the check
# thread takes only the newest; mcl/lsp/server.py), so checking at once keeps up with
# typing and the diagnostics follow an edit by one check, not by a pause plus a check.
DEFAULT_DEBOUNCE_S = 0.0


@dataclass(frozen=True)
class ClientSettings:
    """What the editor sends under `mcl` (`mcl.level`, `mcl.defines`, ...)."""

    level: str | None = None
    defines: tuple[tuple[str, float], ...] = ()
    hwd_path: tuple[str, ...] = ()
    include_path: tuple[str, ...] = ()
    feedback: bool = True
    debounce_s: float = DEFAULT_DEBOUNCE_S

    @staticmethod
    def parse(raw: Any) -> ClientSettings:
        """Read the `mcl` section leniently: a value of the wrong shape is ignored (a
        settings typo must not stop the server)."""
        if isinstance(raw, dict) and isinstance(raw.get("mcl"), dict):
            raw = raw["mcl"]
        if not isinstance(raw, dict):
            return ClientSettings()
        level = raw.get("level")
        debounce = raw.get("debounceMs")
        return ClientSettings(
            level=level if isinstance(level, str) and level else None,
            defines=tuple(_defines(raw.get("defines"))),
            hwd_path=_strings(raw.get("hwdPath")),
            include_path=_strings(raw.get("includePath")),
            feedback=raw.get("feedback") is not False,
            debounce_s=(debounce / 1000 if isinstance(debounce, (int, float))
                        and 0 <= debounce <= 10_000 else DEFAULT_DEBOUNCE_S),
        )


    def answered(self, raw: Any) -> ClientSettings:
        """These settings once the client answered `workspace/configuration` with `raw`
        for the `mcl` section. A null answer means the client has no such section (Neovim
        0.8 and later started with `init_options` only, as docs/editor.md's Neovim 0.7
        configuration does): the settings stay, those of `initializationOptions`
        included, instead of falling back to the defaults."""
        return self if raw is None else ClientSettings.parse(raw)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str) and v)


def _defines(value: Any) -> list[tuple[str, float]]:
    """`{"n": 2048}` or `["n=2048"]`, as `-D n=2048`."""
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(v.split("=", 1)[0], v.split("=", 1)[1]) for v in value
                 if isinstance(v, str) and "=" in v]
    else:
        return []
    out = []
    for name, number in items:
        try:
            number = float(number)
        except (TypeError, ValueError):
            continue
        if isinstance(name, str) and name.strip():
            out.append((name.strip(), int(number) if number.is_integer() else number))
    return out


@dataclass(frozen=True)
class Effective:
    """Settings for one document: paths, level and feedback values."""

    hwd_path: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    level: str | None = None
    values: tuple[tuple[str, float], ...] = ()
    problems: tuple[Any, ...] = field(default=(), compare=False)  # a bad mcl.toml

    @property
    def value_map(self) -> dict[str, float]:
        return dict(self.values)


def effective(client: ClientSettings, document: Path) -> Effective:
    """The project's settings from the document's folder up, with the client's on top:
    client folders come later (they win on name clashes) and are searched first for
    imports, a client level replaces the project's, client values replace same names."""
    problems: tuple[Any, ...] = ()
    try:
        project = find_settings(document.parent)
    except MclError as exc:
        project, problems = Settings(), tuple(exc.diagnostics)
    except OSError:
        project = Settings()
    values = dict(project.values)
    values.update(client.defines)
    return Effective(
        hwd_path=(*project.hwd_path, *client.hwd_path),
        include=(*client.include_path, *project.include),
        level=client.level or project.level,
        values=tuple(values.items()),
        problems=problems,
    )
