"""The Oclgrind cases of issue 20, and their runner (run inside `oclgrind`).

Every kernel file of every kernel folder (`kernels/*/*.mcpl`: each version of a series
too, so new series are picked up by the glob) is run from every leaf it can be translated
to, at two small sizes: the reference's defaults, which are deliberately not multiples of
the tile sizes, and sizes rounded up to a multiple of the file's tile sizes. Run as a
script under `oclgrind` (OCLGRIND_OPTIONS), it runs each case in this one process (so
Oclgrind's compiler and Python start once) with `mcl run --target LEAF [--verify]`, and
writes per case the status and what Oclgrind printed on file descriptor 2.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
# Oclgrind's options per batch: the reference sizes (which the tiles do not divide) run
# in full and are verified against numpy; the sizes rounded up to tile multiples run only
# the first and the last work-group (`--quick`: every group runs the same code, and the
# last one meets the edges), so their results are not compared.
OCLGRIND_OPTIONS = {True: ["--data-races"], False: ["--data-races", "--quick"]}
# Tile sizes above this are not rounded to (256^3 work is minutes inside Oclgrind).
MAX_TILE = 256


def _reference_sizes(folder: Path) -> dict[str, int]:
    text = (folder / "reference.py").read_text(encoding="utf-8")
    found = re.search(r"^SIZES\s*=\s*(\{[^}]*\})", text, re.M)
    return ({k: int(v) for k, v in json.loads(found.group(1).replace("'", '"')).items()}
            if found else {})


def _function_level(path: Path, function: str) -> str | None:
    found = re.search(rf"^\s*(\w+)\s+void\s+{re.escape(function)}\s*\(", path.read_text(), re.M)
    return found.group(1) if found else None


def _tile(path: Path) -> int:
    """The least common multiple of 32 and the file's integer constants up to MAX_TILE
    (tile sizes, threads per block, elements per thread), capped at MAX_TILE."""
    tile = 32
    for value in re.findall(r"^const int \w+ = (\d+);", path.read_text(), re.M):
        if 1 < int(value) <= MAX_TILE:
            tile = math.lcm(tile, int(value))
    return tile if tile <= MAX_TILE else MAX_TILE


def dividing(sizes: dict[str, int], tile: int) -> dict[str, int]:
    """Data sizes (10 and more) rounded up to a multiple of `tile`; small parameters such
    as a 3x5 filter stay."""
    return {k: (-(-v // tile) * tile if v >= 10 else v) for k, v in sizes.items()}


def cases() -> list[dict]:
    from mcl.hdl.library import default_library
    from mcl.translate.levels import descendants

    library = default_library()
    leaves = set(library.leaves())
    out = []
    for folder in sorted(p for p in KERNELS.iterdir() if (p / "reference.py").exists()):
        text = (folder / "reference.py").read_text(encoding="utf-8")
        function = re.search(r"^FUNCTION\s*=\s*['\"](\w+)['\"]", text, re.M)
        sizes = _reference_sizes(folder)
        for path in sorted(folder.glob("*.mcpl")):
            level = _function_level(path, function.group(1)) if function else None
            if level is None or level not in library.names():
                continue
            targets = [level] if level in leaves else [d for d in descendants(library, level)
                                                       if d in leaves]
            for leaf in targets:
                for kind, values in (("reference-sizes", sizes),
                                     ("tile-multiples", dividing(sizes, _tile(path)))):
                    out.append({"id": f"{folder.name}/{path.stem}-{leaf}-{kind}",
                                "file": str(path), "leaf": leaf, "sizes": values,
                                "verify": kind == "reference-sizes"})
    return out


@contextlib.contextmanager
def _capture_fd2(sink: Path):
    """Oclgrind reports on the C++ stderr; point file descriptor 2 at `sink` meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(sink, "wb") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def run_cases(selected: list[dict]) -> list[dict]:
    from mcl.cli import main

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in selected:
            sink = Path(tmp) / "fd2.txt"
            defines = [a for k, v in case["sizes"].items() for a in ("-D", f"{k}={v}")]
            verify = ["--verify"] if case["verify"] else []
            argv = ["run", "--target", case["leaf"], *verify, *defines, case["file"]]
            start = time.monotonic()
            out = io.StringIO()
            with _capture_fd2(sink), contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(out):
                status = main(argv)
            results.append({**case, "status": status, "seconds": time.monotonic() - start,
                            "oclgrind": sink.read_text(errors="replace"),
                            "output": out.getvalue()[-3000:],
                            "command": " ".join(["oclgrind", *OCLGRIND_OPTIONS[case["verify"]],
                                                 "mcl", *argv])})
    return results


if __name__ == "__main__":
    wanted = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps(run_cases(wanted)))
