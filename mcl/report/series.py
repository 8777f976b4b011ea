"""A series of versions of one kernel in refinement order (the rows of Table II).

The order lives in `series.toml` beside the versions (documented in
kernels/matmul/series.toml); a folder without one is a series of its `.mcpl` files
ordered by level (parents before children, in the order of the hierarchy) and version
number. What changed in a hand-written version is the first line of its header comment,
`// change: ...`, so the explanation travels with the code.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, error

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SERIES_FILE = "series.toml"
_CHANGE = re.compile(r"^\s*//\s*change:\s*(?P<text>.*\S)\s*$")
_VERSION = re.compile(r"^(?P<level>.+?)(?:_v(?P<number>\d+))?$")


@dataclass(frozen=True)
class VersionSpec:
    """One row of the series: a hand-written file, or the translation of another row's
    program to `level` (the paper's "(auto-translate)" rows)."""

    name: str
    path: Path | None = None  # the hand-written version; None for a translation
    source: str | None = None  # for a translation: the row whose program is translated
    level: str | None = None  # for a translation: the level it is translated to
    branch: str = ""
    change: str = ""
    run: dict[str, str] = field(default_factory=dict)  # OpenCL device type -> leaf

    @property
    def translated(self) -> bool:
        return self.source is not None

    def leaf_for(self, device_type: str) -> str | None:
        """The leaf whose OpenCL runs this row on a device of `device_type` (gpu, cpu)."""
        return self.run.get(device_type) or self.run.get("any")


@dataclass(frozen=True)
class Series:
    folder: Path
    kernel: str
    title: str
    versions: tuple[VersionSpec, ...]

    def version(self, name: str) -> VersionSpec | None:
        return next((v for v in self.versions if v.name == name), None)

    def names(self) -> list[str]:
        return [v.name for v in self.versions]


def change_of(path: Path) -> str | None:
    """The text of the `// change: ...` line that opens a version's header comment."""
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                match = _CHANGE.match(line)
                return match.group("text") if match else None
    except OSError:
        return None
    return None


def load_series(folder: str | Path, library: HwdLibrary | None = None) -> Series:
    """The series in `folder`: from its series.toml, else from its .mcpl files."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MclError(error("report-no-folder", f"{folder} is not a folder of kernel versions"))
    toml = folder / SERIES_FILE
    if toml.is_file():
        return _from_toml(folder, toml)
    return _from_files(folder, library)


def _from_toml(folder: Path, toml: Path) -> Series:
    try:
        data = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MclError(error("report-series", f"{toml}: {exc}")) from None
    head = data.get("series", {})
    versions: list[VersionSpec] = []
    seen: set[str] = set()
    for number, entry in enumerate(data.get("version", []), start=1):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise MclError(error("report-series", f"{toml}: version {number} has no name"))
        if name in seen:
            raise MclError(error("report-series", f"{toml}: version '{name}' listed twice"))
        source = entry.get("from")
        if source is not None:
            if source not in seen:
                raise MclError(error(
                    "report-series",
                    f"{toml}: '{name}' translates '{source}', which is not listed before it"))
            if not entry.get("level"):
                raise MclError(error("report-series",
                                     f"{toml}: '{name}' translates '{source}' but names no level"))
            path = None
        else:
            path = folder / entry.get("file", f"{name}.mcpl")
            if not path.is_file():
                raise MclError(error("report-series", f"{toml}: '{name}': no file {path.name}"))
        change = (change_of(path) if path else None) or entry.get("change", "")
        versions.append(VersionSpec(name, path, source, entry.get("level"),
                                    entry.get("branch", ""), change, _run_table(entry.get("run"))))
        seen.add(name)
    return Series(folder, head.get("kernel", folder.name), head.get("title", folder.name),
                  tuple(versions))


def _run_table(run: Any) -> dict[str, str]:
    if run is None:
        return {}
    if isinstance(run, str):
        return {"any": run}
    return {str(k): str(v) for k, v in dict(run).items()}


def _from_files(folder: Path, library: HwdLibrary | None) -> Series:
    """Without a series.toml: every .mcpl file, ordered by the position of its level in
    the hierarchy (the file-name prefix before `_vN`) and then by N."""
    from mcl.hdl.library import default_library

    order = {name: i for i, name in enumerate((library or default_library()).names())}

    def key(path: Path) -> tuple[int, int, str]:
        match = _VERSION.match(path.stem)
        level = match.group("level") if match else path.stem
        number = int(match.group("number") or 0) if match else 0
        return (order.get(level, len(order)), number, path.stem)

    files = sorted(folder.glob("*.mcpl"), key=key)
    if not files:
        raise MclError(error("report-no-versions", f"{folder} holds no .mcpl kernel versions"))
    versions = tuple(VersionSpec(p.stem, p, change=change_of(p) or "") for p in files)
    return Series(folder, folder.name, folder.name, versions)
