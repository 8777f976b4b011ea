"""The best configuration `mcl tune` found, kept beside the kernel.

`kernels/matmul/hopper_v2.mcpl` -> `kernels/matmul/hopper_v2.tuned.toml`, one entry per
(leaf, device, sizes):

    [[config]]
    target = "hopper"
    device = "NVIDIA H100 80GB HBM3"
    function = "matmul"
    sizes = { n = 4096, m = 4096, p = 4096 }
    constants = { TILE_K = 16, NR_WARPS = 4 }
    time_ms = 1.234

`mcl run --target`, `mcl codegen` and `mcl report --run` generate the kernel with the
constants of the entry that fits best (same leaf; the same device where known; the
nearest sizes), as if the MCPL source said so (`generate_module(..., overrides=...)`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcl.diagnostics import MclError, error
from mcl.output_files import write_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Number = int | float


@dataclass(frozen=True)
class TunedConfig:
    target: str
    device: str
    function: str
    sizes: dict[str, int]
    constants: dict[str, Number]
    time_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def tuned_path(kernel: str | Path) -> Path:
    path = Path(kernel)
    return path.with_name(f"{path.stem}.tuned.toml")


def read_tuned(kernel: str | Path) -> list[TunedConfig]:
    path = tuned_path(kernel)
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise MclError(error("tune-file", f"{path}: {exc}", hint="fix or delete the file")) from exc
    configs = []
    for entry in data.get("config", []):
        try:
            configs.append(
                TunedConfig(
                    str(entry["target"]),
                    str(entry.get("device", "")),
                    str(entry.get("function", "")),
                    {str(k): int(v) for k, v in entry.get("sizes", {}).items()},
                    dict(entry["constants"]),
                    entry.get("time_ms"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MclError(error("tune-file", f"{path}: an entry lacks or mistypes {exc}")) from exc
    return configs


def _toml_value(v: Any) -> str:
    match v:
        case bool():
            return "true" if v else "false"
        case int() | float():
            return repr(v)
        case dict():
            return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    text = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def write_tuned(kernel: str | Path, config: TunedConfig) -> Path:
    """Add `config` to the kernel's tuned file, replacing an entry of the same leaf,
    device, function and sizes."""
    path = tuned_path(kernel)
    kept = [
        c
        for c in read_tuned(kernel)
        if (c.target, c.device, c.function, c.sizes)
        != (config.target, config.device, config.function, config.sizes)
    ]
    lines = [
        f"# The fastest verified configurations `mcl tune` found for {Path(kernel).name}, by",
        "# leaf, OpenCL device and sizes; `mcl run --target`, `mcl codegen` and",
        "# `mcl report --run` use the entry that fits best (docs/tuning.md).",
    ]
    for c in [*kept, config]:
        lines += ["", "[[config]]"]
        lines.append(f"target = {_toml_value(c.target)}")
        lines.append(f"device = {_toml_value(c.device)}")
        lines.append(f"function = {_toml_value(c.function)}")
        lines.append(f"sizes = {_toml_value(c.sizes)}")
        lines.append(f"constants = {_toml_value(c.constants)}")
        if c.time_ms is not None:
            lines.append(f"time_ms = {c.time_ms!r}")
        for k, v in c.extra.items():
            lines.append(f"{k} = {_toml_value(v)}")
    return write_text(path, "\n".join(lines) + "\n")


def best_tuned(
    kernel: str | Path | None,
    target: str,
    device: str | None = None,
    sizes: dict[str, int] | None = None,
) -> TunedConfig | None:
    """The entry for leaf `target` that fits best: tuned on `device` (any device when
    `device` is None, e.g. for `mcl codegen`), at the nearest sizes (the smallest sum of
    differences of the logarithms of the sizes); the later entry wins a tie."""
    if kernel is None:
        return None
    entries = [c for c in read_tuned(kernel) if c.target == target]
    if device is not None:
        entries = [c for c in entries if c.device == device]
    if not entries:
        return None

    def distance(c: TunedConfig) -> float:
        if not sizes:
            return 0.0
        return sum(
            abs(math.log(max(1, c.sizes.get(k, v))) - math.log(max(1, v))) for k, v in sizes.items()
        )

    return min(reversed(entries), key=distance)


def describe_tuned(c: TunedConfig, kernel: str | Path) -> str:
    constants = ", ".join(f"{k} = {v}" for k, v in c.constants.items())
    sizes = " ".join(f"{k}={v}" for k, v in c.sizes.items())
    return (
        f"using the tuned constants of {tuned_path(kernel).name} ({constants}; tuned on "
        f"{c.device or 'an unnamed device'} at {sizes or 'unknown sizes'})"
    )
