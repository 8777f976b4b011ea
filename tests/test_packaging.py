"""The wheel must carry every mcl package plus the bundled data (pyproject lists the
packages explicitly, because mcl._hwdescs and mcl._kernels are package-dir mappings that
automatic discovery does not see)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mcl").rglob("__init__.py")
    }
    assert set(config["packages"]) == on_disk | {"mcl._hwdescs", "mcl._kernels"}
    assert config["package-dir"]["mcl._hwdescs"] == "hwdescs"
    assert config["package-dir"]["mcl._kernels"] == "kernels"


def test_every_backend_package_has_an_entry_point() -> None:
    # Installed, mcl finds its backends through the entry points (mcl.backends); each
    # subpackage of mcl/backends is one, registered under its own name.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]["mcl.backends"]
    packages = {p.parent.name for p in (ROOT / "mcl" / "backends").glob("*/__init__.py")}
    assert points == {name: f"mcl.backends.{name}:backend" for name in packages}
