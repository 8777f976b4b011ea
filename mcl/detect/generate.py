"""Write a hardware description (and its OpenCL mapping) from a query.

The library level the description specializes follows the kind of device (paper
section 5: a leaf specializes the level closest to it): an NVIDIA GPU of compute
capability 9.x specializes `hopper` (same parallelism hierarchy, so every hopper kernel
translates one-to-one to it), another NVIDIA GPU `nvidia`, any other GPU `gpu`, a CPU
`cpu`. Every figure carries a comment saying where it came from; what no query gives and
no `--measure` measured is left out (a missing roof is better than an invented one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcl.detect.facts import (
    Figure,
    compute_capability,
    device_kind,
    device_name,
    figure,
    is_nvidia,
    text,
)
from mcl.detect.inherited import fitted
from mcl.detect.inherited import launch as inherited_launch
from mcl.detect.measured_text import (
    bandwidth_statement,
    copy_comment,
    deviation,
    fma_comment,
    latency_statement,
    launch_statement,
)
from mcl.detect.measurements import Measurements
from mcl.detect.nvidia_specs import sm_spec
from mcl.diagnostics import MclError, error

COMMENT_COLUMN = 34
GPU_THREADS = 1024  # gpu.hdl's threads per block (the paper's Fig. 8)

# A Hopper GPU's occupancy follows hopper's allocation rules (compute capability 9.x), read
# from the description's own figures; the function is found in NAME_feedback.py next to
# NAME.hdl (mcl.feedback.analyses.functions).
HOPPER_FEEDBACK = (
    '"""Performance feedback functions of {name}.hdl, written by mcl hwd detect: a GPU of\n'
    '''compute capability 9.x allocates registers and shared memory by hopper's rules
(hwdescs/hopper_feedback.py), applied to the figures of {name}.hdl."""

from mcl._hwdescs.hopper_feedback import divergence, load_store_optimality, occupancy

__all__ = ["divergence", "load_store_optimality", "occupancy"]
'''
)


@dataclass(frozen=True)
class Generated:
    name: str
    parent: str
    hdl: str
    mapping: str  # NAME.opencl.toml
    cuda_mapping: str | None = None  # NAME.cuda.toml, NVIDIA GPUs only
    feedback: str | None = None  # NAME_feedback.py, where the parent's functions apply
    warnings: tuple[str, ...] = ()  # measured figures far from the nominal ones

    def files(self) -> dict[str, str]:
        """The files to write, by name: NAME.hdl, NAME.opencl.toml and, where they apply,
        NAME.cuda.toml and NAME_feedback.py."""
        written = {f"{self.name}.hdl": self.hdl, f"{self.name}.opencl.toml": self.mapping}
        if self.cuda_mapping is not None:
            written[f"{self.name}.cuda.toml"] = self.cuda_mapping
        if self.feedback is not None:
            written[f"{self.name}_feedback.py"] = self.feedback
        return written


__all__ = ["Generated", "Measurements", "default_name", "generate", "parent_level"]


def default_name(q: dict[str, Any]) -> str:
    """An HDL identifier from the device's name: `NVIDIA H100 80GB HBM3` ->
    `nvidia_h100_80gb_hbm3`."""
    words = re.sub(r"\([^)]*\)", " ", device_name(q).lower())
    slug = "_".join(w for w in re.split(r"[^a-z0-9]+", words) if w)[:40].strip("_")
    if not slug:
        slug = "device"
    return slug if slug[0].isalpha() else "d_" + slug


def parent_level(q: dict[str, Any]) -> str:
    kind = device_kind(q)
    if kind == "cpu":
        return "cpu"
    if kind != "gpu":
        raise MclError(error(
            "detect-unsupported-device",
            f"'{device_name(q)}' is an OpenCL {kind} device; mcl hwd detect describes GPUs "
            "and CPUs", hint="pick a GPU or CPU with --device (see mcl devices), or "
            "--device host"))
    if is_nvidia(q):
        cc = compute_capability(q)
        return "hopper" if cc is not None and cc[0] == 9 else "nvidia"
    group = figure(q, ("opencl", "max_work_group_size"))
    # gpu allows 1024 threads a block; a device with smaller work-groups cannot refine it
    # (hdl.md §3.4: a child's counts are at least as large), so it refines accelerator.
    return "gpu" if group is None or group.value >= GPU_THREADS else "accelerator"


def generate(q: dict[str, Any], name: str | None = None,
             measured: Measurements | None = None) -> Generated:
    """The description of the queried device, named `name` (default: from the device)."""
    name = name or default_name(q)
    measured = measured or Measurements()
    parent = parent_level(q)
    lines = Lines(measured.warnings)
    if parent == "cpu":
        mapping = _cpu(lines, q, name, measured)
    elif parent in ("gpu", "accelerator"):
        mapping = _gpu(lines, q, name, parent, measured)
    else:
        mapping = _nvidia(lines, q, name, parent, measured)
    _launch(lines, measured, name, parent, _clock(q, parent))
    if parent not in ("cpu", "gpu", "accelerator"):
        feedback = HOPPER_FEEDBACK.format(name=name) if parent == "hopper" else None
        return Generated(name, parent, lines.text(), mapping, _cuda_mapping(q, name), feedback,
                         tuple(lines.warnings))
    return Generated(name, parent, lines.text(), mapping, warnings=tuple(lines.warnings))


# ------------------------------------------------------------------ text helpers


class Lines:
    """The description's lines, and the warnings about its measured figures (written as
    comments above `hardware_description`)."""

    def __init__(self, warnings: Sequence[str] = ()) -> None:
        self.lines: list[str] = []
        self.warnings: list[str] = list(warnings)

    def compare(self, what: str, measured: float, nominal: float, source: str,
                unit: tuple[float, str]) -> None:
        """Warn where `measured` is far from `nominal` (measured_text.TOLERANCE)."""
        warning = deviation(what, measured, nominal, source, unit)
        if warning is not None:
            self.warnings.append(warning)

    def add(self, code: str, comment: str = "") -> None:
        """One line, its comment aligned as in the bundled descriptions; a long comment
        goes on as further comment lines under it."""
        if not comment:
            self.lines.append(code)
            return
        indent = max(COMMENT_COLUMN, len(code) + 1)
        width = max(40, 96 - indent - 3)
        chunks = _wrap(comment, width)
        self.lines.append(code.ljust(indent) + "// " + chunks[0])
        self.lines += [" " * indent + "// " + c for c in chunks[1:]]

    def text(self) -> str:
        lines = list(self.lines)
        if self.warnings:
            at = next((i for i, line in enumerate(lines)
                       if line.startswith("hardware_description")), 0)
            notes = ["// Warnings of the measurement (also printed by mcl hwd detect):"]
            for warning in self.warnings:
                notes += ["//   " + c for c in _wrap("- " + warning, 88)]
            lines[at:at] = notes
        return "\n".join(lines) + "\n"


def _wrap(comment: str, width: int) -> list[str]:
    out: list[str] = []
    line = ""
    for word in comment.split():
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return out + [line] if line else out or [""]


def _size(n: float) -> str:
    """A byte count as HDL writes it (binary prefixes for sizes, hdl.md §1)."""
    n = int(n)
    for unit, factor in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("kB", 1024)):
        if n % factor == 0 and n >= factor:
            return f"{n // factor} {unit}"
    return f"{n} B"


def _rate(bytes_per_s: float) -> str:
    """A bandwidth in whole MB/s (decimal prefixes for rates)."""
    return f"{round(bytes_per_s / 1e6)} MB/s"


def _frequency(mhz: float) -> str:
    """A clock as HDL writes it: whole MHz, else kHz (HDL numbers are integers)."""
    return f"{int(mhz)} MHz" if float(mhz).is_integer() else f"{round(mhz * 1000)} kHz"


def _gbs(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.1f} GB/s"


def _header(q: dict[str, Any], name: str, parent: str, what: str) -> list[str]:
    device = " ".join(device_name(q).split())  # a device name on one comment line
    lines = [f"// {name} — {device}, {what}.",
             "// Written by `mcl hwd detect` from the device's own answers (each figure's comment",
             "// says which); edit what you know better. docs/hdl.md: \"Bring your own machine\"."]
    for section, label in (("opencl", "OpenCL"), ("cuda", "CUDA")):
        if section in q:
            extra = text(q, section, "driver_version") or text(q, section, "version")
            line = (f"{label}: {text(q, section, 'name') or device}"
                    + (f" ({extra})" if extra else "")
                    + (f", platform {text(q, section, 'platform')}"
                       if text(q, section, "platform") else ""))
            lines.append("// " + " ".join(line.split()))
    return lines + [f"hardware_description {name};", f"specializes {parent};", ""]


def _bandwidth_line(lines: Lines, nominal: tuple[float, str] | None, measured: Measurements
                    ) -> None:
    """`bandwidth = ...;` the memory's peak (`memory_peak`), the measured read, write and
    copy beside it in the comment (a copy far from the nominal figure warned about)."""
    nominal_text = f"nominal {_gbs(nominal[0])} ({nominal[1]})" if nominal else "no nominal figure"
    copy = measured.copy_bytes_per_s
    peak = memory_peak(nominal[0] if nominal else None, measured)
    if copy or any(k in measured.rates for k in ("read", "write")):
        how = (copy_comment(measured) if measured.rates else
               f"{_gbs(copy or 0.0)} ({measured.notes.get('copy', 'OpenCL copy kernel')})")
        roof = ("the nominal figure, the highest rate of all" if nominal and peak == nominal[0]
                else "the highest rate measured")
        lines.add(f"  bandwidth = {_rate(peak)};",
                  f"{roof} (the roofline's peak, the rate the time model's achieved share "
                  f"is of, docs/hdl.md); measured {how}; {nominal_text}")
        if nominal is not None and copy:
            lines.compare("device-memory copy bandwidth", copy, nominal[0], nominal[1],
                          (1e9, "GB/s"))
    elif peak:
        lines.add(f"  bandwidth = {_rate(peak)};",
                  f"{nominal_text}; not measured (mcl hwd detect --measure)")
    else:
        lines.add("  // bandwidth: no query gives it; mcl hwd detect --measure measures it")


def memory_peak(nominal: float | None, measured: Measurements) -> float:
    """The device memory's peak: the highest of the nominal rate and every rate measured
    (read, write, copy; 0 where there is none). A description's `bandwidth` is a roof: the
    roofline's "at least" divides by it, so it must be no less than any kernel reaches (a
    read-only kernel outruns the copy, 2,995 vs 2,873 GB/s on an H100); and the time
    model's `ACHIEVED_BANDWIDTH` is a share of that peak, fitted at hopper.hdl's nominal
    3,350 GB/s, so a measured copy stated there would be discounted twice."""
    rates = [measured.rates[k].value for k in ("read", "write", "copy") if k in measured.rates]
    # A figure of 0 (a failed measurement, a driver that reports none) is no rate: HDL
    # refuses a bandwidth of 0.
    return max([nominal or 0.0, measured.copy_bytes_per_s or 0.0, *rates])


def _pcie(lines: Lines, measured: Measurements, mem: str) -> None:
    lines.add("interconnect pcie {")
    lines.add(f"  connects({mem}, host);")
    lines.add("  latency = 1000 cycles;", "as accelerator (hardware.md)")
    both = [b for b in (measured.host_to_device, measured.device_to_host) if b]
    if both:
        lines.add(f"  bandwidth = {_rate(min(both))};",
                  "measured, the slower direction: host to device "
                  f"{_gbs(measured.host_to_device or 0)}, device to host "
                  f"{_gbs(measured.device_to_host or 0)} ("
                  + measured.notes.get("transfer", "pinned buffers") + ")")
    else:
        lines.add("  // bandwidth: no query gives the link; mcl hwd detect --measure measures it")
    lines.add("}")


Statement = tuple[str, str] | None  # (code, comment); None: left out


def _block(lines: Lines, head: str, statements: Sequence[Statement]) -> None:
    """`head { statements }` and a blank line; statements indented by two."""
    lines.add(f"{head} {{")
    for statement in statements:
        if statement is not None:
            lines.add(f"  {statement[0]}", statement[1])
    lines.add("}")
    lines.add("")


def _capacity(fig: Figure | None) -> Statement:
    return None if fig is None else (f"capacity = {_size(fig.value)};", fig.source)


def _hopper_feedback(parent: str, function: str, what: str) -> Statement:
    """hopper's `performance_feedback(function)` where the parent is hopper: the
    analyses the time model reads (the accesses' sectors and bank conflicts, the lanes
    on different paths) come from these functions, so a detected Hopper GPU names them
    as hopper.hdl does."""
    if parent != "hopper":
        return None
    return (f'performance_feedback("{function}");', f"as hopper: {what}")


def _unit_group(lines: Lines, indent: str, kinds: tuple[str, str], names: tuple[str, str],
                count: tuple[int, str], slots: list[tuple[str, str, str]], body: list[str],
                feedback: Statement = None) -> None:
    """A group of lanes and its unit (`simd_group vector_unit { ... simd_unit lane ... }`):
    `count` the number of units and its source; `slots` (level, par_unit, comment) with
    level "group" or "unit", each one slot; `body` the unit's instruction blocks;
    `feedback` a `performance_feedback` statement of the group."""
    group_kind, unit_kind = kinds
    lines.add(f"{indent}{group_kind} {names[0]} {{")
    lines.add(f"{indent}  nr_units = {count[0]};", count[1])
    for level, unit, comment in slots:
        if level == "group":
            lines.add(f"{indent}  slots({unit}, 1);", comment)
    if feedback is not None:
        lines.add(f"{indent}  {feedback[0]}", feedback[1])
    lines.add(f"{indent}  {unit_kind} {names[1]} {{")
    for level, unit, comment in slots:
        if level == "unit":
            lines.add(f"{indent}    slots({unit}, 1);", comment)
    for statement in body:
        lines.add(f"{indent}    {statement}")
    lines.add(f"{indent}  }}")
    lines.add(f"{indent}}}")


def _ops(measured: Measurements) -> str:
    """The lane's operators: perfect's at cost 1, or (measured) none beyond `fp`, which
    then states them at the measured rate (mcl.hdl.peak takes the fastest instruction)."""
    return "// + and - in fp below (measured)" if measured.fma_flops else "perfect.ops;"


def _fp_block(lines: Lines, nominal_flops: float, measured: Measurements, per_lane: str,
              double_cost: tuple[str, str] | None) -> None:
    """`instructions fp`: one float32 FMA per lane per cycle nominally; measured, the cost
    is what makes the peak (units x clock x 2 / cost) equal the measured rate."""
    lines.add("instructions fp {")
    cost = ""
    if measured.fma_flops:
        # HDL numbers are integers: the cost is nominal MFLOP/s over measured MFLOP/s.
        cost = f"{round(nominal_flops / 1e6)} / {max(1, round(measured.fma_flops / 1e6))}"
        lines.add(f"  op(\"fma\", {cost});",
                  f"measured {measured.fma_flops / 1e9:.1f} GFLOP/s float32 ("
                  + fma_comment(measured) + f"); nominal {nominal_flops / 1e9:.1f}"
                  f" GFLOP/s at {per_lane}: the cost is nominal/measured")
        lines.compare("float32 FMA peak", measured.fma_flops, nominal_flops,
                      f"units x lanes x 2 x clock: {per_lane}", (1e9, "GFLOP/s"))
        lines.add(f"  op((+), {cost});", "adds and subtracts at the same measured rate "
                  "(they replace perfect.ops, whose cost 1 would otherwise set the peak)")
        lines.add(f"  op((-), {cost});")
    else:
        lines.add("  op(\"fma\", 1);", f"nominal: {per_lane}; not measured "
                  "(mcl hwd detect --measure)")
    if double_cost is not None:
        double, source = double_cost
        if cost:  # float64 scaled as float32 was (not measured itself)
            lines.add(f"  op(\"fma_double\", {double} * {cost});",
                      source + "; scaled by the float32 measured/nominal ratio")
        else:
            lines.add(f"  op(\"fma_double\", {double});", source)
    lines.add("}")


# ------------------------------------------------------------------ CPU


def _simd(q: dict[str, Any]) -> tuple[int, int, str]:
    """(float lanes, vector registers, source) from the ISA flags, else OpenCL."""
    flags = set((q.get("host") or {}).get("flags") or [])
    if "avx512f" in flags:
        return 16, 32, "/proc/cpuinfo flags: avx512f (512-bit vectors, 32 zmm registers)"
    if "avx" in flags:
        return 8, 16, "/proc/cpuinfo flags: avx (256-bit vectors, 16 ymm registers)"
    if "asimd" in flags:
        return 4, 32, "/proc/cpuinfo features: asimd (128-bit NEON, 32 vector registers)"
    if "sse2" in flags or "sse" in flags:
        return 4, 16, "/proc/cpuinfo flags: sse (128-bit vectors, 16 xmm registers)"
    width = figure(q, ("opencl", "native_vector_width_float"))
    if width is not None:
        return width.int, 16, width.source + " (register count assumed: 16)"
    return 4, 16, "as cpu (no ISA flags or OpenCL vector width found)"


def _measured_latency(measured: Measurements, key: str, clock: Figure | None) -> Statement:
    """A latency statement where `key` was measured and a clock turns it into cycles."""
    rate = measured.rates.get(key)
    return None if rate is None or clock is None else latency_statement(
        rate, clock.value, clock.source)


def _measured_bandwidth(measured: Measurements, key: str, instances: int,
                        what: str) -> Statement:
    rate = measured.rates.get(key)
    return None if rate is None else bandwidth_statement(rate, instances, what)


def _launch(lines: Lines, measured: Measurements, name: str, parent: str,
            clock: Figure | None) -> None:
    """The cost of a kernel launch: the device's `latency` (docs/hdl.md), first in its
    block, in cycles of the clock the description states; the bundled parent's where it
    states one (mcl.detect.inherited.launch: a profiler's timing, not OpenCL's events),
    the measured one in the comment."""
    from mcl.hdl.build import _DEVICE_PROPS

    launch = measured.rates.get("launch")
    head = f"device {name} {{"
    if launch is None or clock is None or head not in lines.lines:
        return
    stated = "device" in _DEVICE_PROPS.get("latency", ())
    statement = Lines()
    statement.add(*("  " + part if i == 0 else part for i, part in enumerate(
        launch_statement(launch, measured.rates.get("launch_wall"), clock.value,
                         clock.source, stated, (parent, inherited_launch(parent))))))
    at = lines.lines.index(head) + 1
    lines.lines[at:at] = statement.lines


def _clock(q: dict[str, Any], parent: str) -> Figure | None:
    """The clock the description states (MHz): a CPU core's, an NVIDIA SM's, a GPU's."""
    if parent == "cpu":
        return _cpu_clock(q)
    khz = figure(q, ("cuda", "CLOCK_RATE"))
    if khz is not None and parent not in ("gpu", "accelerator"):
        return Figure(khz.value / 1000, khz.source + " kHz")
    return figure(q, ("opencl", "max_clock_frequency"))


def _cpu_clock(q: dict[str, Any]) -> Figure | None:
    return figure(q, ("host", "max_mhz"), ("opencl", "max_clock_frequency"), ("host", "mhz"))


def _cpu(lines: Lines, q: dict[str, Any], name: str, measured: Measurements) -> str:
    host = q.get("host") or {}
    lanes, nregs, simd_source = _simd(q)
    sockets = figure(q, ("host", "sockets")) or Figure(1, "assumed: 1 (no /proc/cpuinfo)")
    cores = figure(q, ("host", "cores_per_socket")) or figure(q, ("opencl", "max_compute_units"))
    cores = cores or Figure(1, "assumed: 1")
    threads = figure(q, ("host", "threads_per_core")) or Figure(1, "assumed: 1")
    clock = _cpu_clock(q)
    memory = figure(q, ("host", "mem_total_kb"))
    flags = set(host.get("flags") or [])
    fma = bool(flags & {"fma", "avx512f", "asimd"}) or not flags
    caches = host.get("caches") or []
    total_cores = sockets.int * cores.int

    lines.lines += _header(q, name, "cpu", "a multicore CPU")
    lines.add("parallelism hierarchy {")
    lines.add("  memory_space main {")
    lines.add("    default;")
    lines.add("  }")
    lines.add("  par_group threads {")
    lines.add("    max_nr_units = unlimited;", "as cpu")
    lines.add("    par_unit thread {")
    lines.add("      par_group vectors {")
    lines.add(f"        max_nr_units = {lanes};", f"float lanes: {simd_source}")
    lines.add("        cpu.hierarchy.threads.thread.vectors.vector;")
    lines.add("      }")
    lines.add("    }")
    lines.add("  }")
    lines.add("}")
    lines.add("")
    lines.add(f"device {name} {{")
    lines.add("  mem;")
    lines.add("  ic;")
    lines.add("  sockets;")
    lines.add("}")
    lines.add("")
    _block(lines, "memory mem", [
        ("space(main);", ""),
        (f"capacity = {memory.int} kB;", memory.source) if memory is not None
        else _capacity(figure(q, ("opencl", "global_mem_size")))])
    lines.add("interconnect ic {")
    lines.add("  connects(mem, sockets.socket[*]);")
    _bandwidth_line(lines, None, measured)
    if (latency := _measured_latency(measured, "latency_memory", clock)) is not None:
        lines.add(f"  {latency[0]}", latency[1])
    lines.add("}")
    lines.add("")
    per_core, per_socket = [], []
    for cache in caches:
        level, size, instances = cache["level"], cache["size"], cache["instances"]
        block = f"l{level}"
        source = (f"/sys/.../cache/index*: L{level} {cache['type']} {_size(size)} x "
                  f"{instances} instance{'s' if instances != 1 else ''}")
        if instances >= total_cores:
            per_core.append(block)
            capacity = size
        else:
            per_socket.append(block)
            capacity = size * instances // sockets.int
            if instances != sockets.int:
                source += f", {_size(capacity)} per socket"
        line = cache.get("line")
        _block(lines, f"cache {block}", [
            ("space(main);", ""), _capacity(Figure(capacity, source)),
            (f"cache_line_size = {line} B;", f"/sys/.../cache/index*/coherency_line_size: "
             f"{line}") if line else None,
            _measured_latency(measured, f"latency_{block}", clock),
            _measured_bandwidth(measured, block, instances,
                                "core" if block in per_core else "instance")])
    lines.add("device_group sockets {")
    lines.add(f"  nr_units = {sockets.int};", sockets.source)
    lines.add("  device_unit socket {")
    for block in per_socket:
        lines.add(f"    {block};")
    lines.add("    cores;")
    lines.add("  }")
    lines.add("}")
    lines.add("")
    _block(lines, "memory regs", [("space(reg);", ""), ("addressable = false;", ""),
                                  (f"capacity = {nregs} * {lanes * 32} bit;", simd_source)])
    lines.add("execution_group cores {")
    lines.add(f"  nr_units = {cores.int};", cores.source)
    lines.add("  execution_unit core {")
    lines.add(f"    slots(thread, {threads.int});", threads.source)
    if clock is not None:
        lines.add(f"    clock_frequency = {_frequency(clock.value)};", clock.source)
    else:
        lines.add("    // clock_frequency: no query gave it (no compute peak without it)")
    lines.add("    regs;")
    for block in per_core:
        lines.add(f"    {block};")
    lines.add("    vector_unit;")
    lines.add("    vector_memory;")
    lines.add("  }")
    lines.add("}")
    lines.add("")
    issue = "a thread issues one vector instruction at a time (as cpu)"
    _unit_group(lines, "", ("simd_group", "simd_unit"), ("vector_unit", "lane"),
                (lanes, f"float lanes: {simd_source}"),
                [("group", "thread", issue), ("unit", "vector", "one vector lane (as cpu)")],
                [_ops(measured), "fp;"])
    lines.add("")
    nominal = total_cores * lanes * 2 * (clock.value * 1e6 if clock else 0)
    per_lane = ("one fused multiply-add per lane per cycle (one vector FMA a cycle per core; "
                "cores with two FMA pipes do twice that)" if fma else
                "no FMA instruction (flags lack fma): a multiply and an add per lane per cycle")
    lines.add("// Floating-point instructions of a core (docs/hdl.md, \"Peak throughput\").")
    _fp_block(lines, nominal, measured, per_lane,
              ("2", "float64: half the lanes of a vector (an assumption: most CPUs run float64 "
                  "FMA at the float32 instruction rate)"))
    lines.add("")
    _unit_group(lines, "", ("load_store_group", "load_store_unit"), ("vector_memory", "lane"),
                (lanes, "vector loads and stores move all lanes at once"),
                [("group", "thread", issue), ("unit", "vector", "one vector lane (as cpu)")],
                ["perfect.memory_ops;"])
    mapping = _mapping(name, "cpu", [
        "# A thread is a work-group and its vector lanes are the work-items of that group:",
        "# PoCL's CPU device vectorises across the work-items of a group (as x86_avx512).",
    ], {"threads": ("work-group", 0), "vectors": ("work-item", 0)},
        {"main": ("global", "global"), "reg": ("private", None)}, vector_width=0)
    return mapping


def _mapping(name: str, device_type: str, comment: list[str],
             groups: dict[str, tuple[str, int]], spaces: dict[str, tuple[str, str | None]],
             vector_width: int, language: str = "OpenCL", settings: tuple[str, ...] = ()
             ) -> str:
    out = [f"# {language} mapping of `{name}` (paper sections 4.4 and 7), written by mcl hwd "
           "detect", "# beside its .hdl; read by mcl.codegen.mapping (docs/codegen.md).", "#",
           *comment, f'device_type = "{device_type}"', *settings, "", "[par_groups]"]
    out += [f'{g} = {{ role = "{role}", dim = {dim} }}' for g, (role, dim) in groups.items()]
    out += ["", "[spaces]"]
    for space, (address, barrier) in spaces.items():
        out.append(f'{space} = {{ address_space = "{address}"'
                   + (f', barrier = "{barrier}"' if barrier else "") + " }")
    if vector_width:
        out += ["", "[codegen]", f"vector_width = {vector_width}"]
    return "\n".join(out) + "\n"


def _cuda_mapping(q: dict[str, Any], name: str) -> str:
    """hopper.cuda.toml's mapping in CUDA's words, for the device's architecture."""
    cc = compute_capability(q)
    major, minor = (cc[0], cc[1]) if cc is not None else (9, 0)
    return _mapping(name, "gpu", [
        "# A block of the MCPL code is a CUDA thread block; its warps and threads are the",
        "# block's threads, threads along x and warps along y (as hopper).",
        "# The architecture: the device's compute capability.",
    ], {"blocks": ("block", 0), "warps": ("thread", 1), "threads": ("thread", 0)},
        {"global": ("global", "block"), "constant": ("constant", None),
         "shared": ("shared", "block"), "local": ("register", None),
         "reg": ("register", None)},
        vector_width=4, language="CUDA", settings=(f'arch = "sm_{major}{minor}"',))


# ------------------------------------------------------------------ GPUs


def _memory_bandwidth(q: dict[str, Any]) -> tuple[float, str] | None:
    """Nominal device-memory bandwidth from CUDA: memory clock x bus width x 2 (double
    data rate)."""
    cuda = q.get("cuda") or {}
    khz, bits = cuda.get("MEMORY_CLOCK_RATE"), cuda.get("GLOBAL_MEMORY_BUS_WIDTH")
    if not khz or not bits:
        return None
    return (khz * 1e3 * 2 * bits / 8,
            f"CUDA MEMORY_CLOCK_RATE {khz / 1000:g} MHz x GLOBAL_MEMORY_BUS_WIDTH {bits} bit x 2")


# Load latencies (SM cycles) the time model reads (docs/feedback.md, Time estimate), by
# NVIDIA compute capability major: no query states them, mcl does not measure them, so a
# detected GPU gets the figures its bundled description cites (hwdescs/hopper.hdl).
LATENCIES: dict[int, dict[str, Statement]] = {
    9: {"ic": ("latency = 600 cycles;", "as hopper.hdl: third-party H100 memory-hierarchy "
                                        "tables, not measured by mcl"),
        "l2": ("latency = 200 cycles;", "as hopper.hdl: the same tables, not measured")},
}


def _gpu_latency(lines: Lines, measured: Measurements, key: str, clock: Figure | None,
                 nominal: Statement, what: str) -> Statement:
    """A measured latency in cycles where there is one (warned about where far from the
    `nominal` statement's cycles), else the nominal statement."""
    stated = _measured_latency(measured, key, clock)
    if stated is None:
        return nominal
    if nominal is not None:
        nominal_cycles = float(nominal[0].split("=")[1].split()[0])
        lines.compare(what, float(stated[0].split("=")[1].split()[0]), nominal_cycles,
                      nominal[1], (1, "cycles"))
        stated = (stated[0], f"{stated[1]}; nominal {nominal[0]} {nominal[1]}")
    return stated


def _gpu_common(lines: Lines, q: dict[str, Any], spaces: list[str], cached: list[str],
                measured: Measurements, processors: str, clock: Figure | None,
                latency: dict[str, Statement] | None = None,
                inherited: Sequence[Statement] = ()) -> None:
    """mem, pcie, ic and l2 of a GPU: the blocks every GPU description has; device memory
    holds `spaces`, the L2 caches `cached`; `latency` the ic's and l2's nominal latencies
    (what a measured latency at `clock` replaces); `inherited` the parent's fitted l2
    figures (mcl.detect.inherited)."""
    latency = latency or {}
    mem = figure(q, ("cuda", "total_mem"), ("opencl", "global_mem_size"))
    _block(lines, "memory mem", [*((f"space({s});", "") for s in spaces), _capacity(mem)])
    lines.add("interconnect ic {")
    lines.add(f"  connects(mem, {processors}[*]);")
    _bandwidth_line(lines, _memory_bandwidth(q), measured)
    ic = _gpu_latency(lines, measured, "latency_memory", clock, latency.get("ic"),
                      "device-memory load latency")
    if ic is not None:
        lines.add(f"  {ic[0]}", ic[1])
    lines.add("}")
    lines.add("")
    _pcie(lines, measured, "mem")
    lines.add("")
    l2 = figure(q, ("cuda", "L2_CACHE_SIZE"), ("opencl", "global_mem_cache_size"))
    line = figure(q, ("opencl", "global_mem_cacheline_size"))
    _block(lines, "cache l2", [*((f"space({s});", "") for s in cached), _capacity(l2),
                               None if line is None or line.int < 1 else (
                                   f"cache_line_size = {line.int} B;", line.source),
                               _gpu_latency(lines, measured, "latency_l2", clock,
                                            latency.get("l2"), "L2 load latency"),
                               _measured_bandwidth(measured, "l2", 1, "device (one L2)"),
                               *inherited])


def _gpu(lines: Lines, q: dict[str, Any], name: str, parent: str,
         measured: Measurements) -> str:
    units = figure(q, ("opencl", "max_compute_units")) or Figure(1, "assumed: 1")
    group = figure(q, ("opencl", "max_work_group_size")) or Figure(1024, "as gpu")
    clock = _clock(q, parent)
    local = figure(q, ("opencl", "local_mem_size"))
    simds, width = figure(q, ("opencl", "simd_per_compute_unit_amd")), figure(
        q, ("opencl", "simd_width_amd"))
    if simds is not None and width is not None:
        lanes = Figure(simds.value * width.value, f"{simds.source} x {width.source}")
    else:
        lanes = Figure(32, "as gpu (OpenCL does not say how many lanes a compute unit has)")
    lines.lines += _header(q, name, parent, "a GPU" if parent == "gpu" else
                           f"a GPU whose work-groups hold fewer than gpu's {GPU_THREADS} threads")
    for code, comment in (
            ("parallelism hierarchy {", ""), ("  memory_space dev {", ""),
            ("    default;", ""), ("  }", ""), ("  par_group blocks {", ""),
            ("    max_nr_units = 65535;", "as gpu (OpenCL states no limit on work-groups)"),
            ("    par_unit block {", ""), ("      memory_space local {", ""), ("      }", ""),
            ("      par_group threads {", ""),
            (f"        max_nr_units = {group.int};", group.source),
            ("        perfect.hierarchy.threads.thread;", ""), ("      }", ""), ("    }", ""),
            ("  }", ""), ("}", ""), ("", ""), (f"device {name} {{", ""), ("  mem;", ""),
            ("  accelerator.host;", ""), ("  pcie;", ""), ("  ic;", ""), ("  l2;", ""),
            ("  processors;", ""), ("}", ""), ("", "")):
        lines.add(code, comment)
    _gpu_common(lines, q, ["dev"], ["dev"], measured, "processors.processor", clock)
    _block(lines, "memory on_chip", [("space(local);", ""), _capacity(local),
                                     _measured_latency(measured, "latency_local", clock),
                                     _measured_bandwidth(measured, "local", units.int,
                                                         "compute unit")])
    _block(lines, "memory regs", [("space(reg);", ""), ("addressable = false;", "")])
    lines.add("execution_group processors {")
    lines.add(f"  nr_units = {units.int};", units.source)
    lines.add("  execution_unit processor {")
    lines.add("    slots(block, 1);", "as gpu (OpenCL does not say how many work-groups a "
              "compute unit holds)")
    if clock is not None:
        lines.add(f"    clock_frequency = {_frequency(clock.value)};", clock.source)
    lines.add("    on_chip;")
    lines.add("    regs;")
    per_lane = [("unit", "thread", "one thread per lane (as gpu)")]
    _unit_group(lines, "    ", ("execution_group", "execution_unit"), ("alus", "alu"),
                (lanes.int, lanes.source), per_lane, [_ops(measured), "fp;"])
    _unit_group(lines, "    ", ("load_store_group", "load_store_unit"), ("lsus", "lsu"),
                (lanes.int, "one per lane, as gpu"), per_lane, ["perfect.memory_ops;"])
    lines.add("  }")
    lines.add("}")
    lines.add("")
    nominal = units.value * lanes.value * 2 * (clock.value * 1e6 if clock else 0)
    _fp_block(lines, nominal, measured, "one float32 fused multiply-add per lane per cycle",
              None)
    mapping = _mapping(name, "gpu", [
        "# A block is a work-group, its threads the work-items of that group."],
        {"blocks": ("work-group", 0), "threads": ("work-item", 0)},
        {"dev": ("global", "global"), "local": ("local", "local"), "reg": ("private", None)},
        vector_width=0)
    return mapping


def _nvidia(lines: Lines, q: dict[str, Any], name: str, parent: str,
            measured: Measurements) -> str:
    cc = compute_capability(q)
    major, minor, cc_source = cc if cc is not None else (9, 0, "assumed")
    spec, spec_source = sm_spec(major, minor)
    sms = figure(q, ("cuda", "MULTIPROCESSOR_COUNT"), ("opencl", "max_compute_units"))
    sms = sms or Figure(1, "assumed: 1")
    warp = figure(q, ("cuda", "WARP_SIZE"), ("opencl", "warp_size_nv")) or Figure(32, "NVIDIA: 32")
    per_block = figure(q, ("cuda", "MAX_THREADS_PER_BLOCK"), ("opencl", "max_work_group_size"))
    per_block = per_block or Figure(1024, "CUDA guide: 1024")
    grid = figure(q, ("cuda", "MAX_GRID_DIM_X")) or Figure(
        2147483647, f"{spec_source}: 2^31 - 1 blocks in grid dimension x")
    clock = _clock(q, parent)
    shared_sm = figure(q, ("cuda", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")) or Figure(
        spec.max_shared_kb * 1024, f"{spec_source}: {spec.max_shared_kb} kB per SM")
    regs = figure(q, ("cuda", "MAX_REGISTERS_PER_MULTIPROCESSOR")) or Figure(
        65536, f"{spec_source}: 64 K registers per SM")
    threads_sm = figure(q, ("cuda", "MAX_THREADS_PER_MULTIPROCESSOR")) or Figure(
        spec.threads_per_sm, f"{spec_source}: {spec.threads_per_sm} threads per SM")
    blocks_sm = figure(q, ("cuda", "MAX_BLOCKS_PER_MULTIPROCESSOR")) or Figure(
        spec.blocks_per_sm, f"{spec_source}: {spec.blocks_per_sm} blocks per SM")
    warps_sm = threads_sm.int // warp.int
    parts = spec.partitions
    lanes = spec.fp32_lanes // parts
    lsus = spec.lsus // parts
    l1 = spec.l1_shared_kb * 1024 - shared_sm.int
    smp_bytes = spec.lsus * 4  # a 4 B word per load/store unit per cycle
    cc_text = f"compute capability {major}.{minor} ({cc_source}), {spec.architecture}"

    lines.lines += _header(q, name, parent, cc_text)
    for code, comment in (
            ("parallelism hierarchy {", ""), ("  memory_space global {", ""),
            ("    default;", ""), ("  }", ""), ("  memory_space constant {", ""),
            ("    read_only;", "as hopper"), ("  }", ""), ("  par_group blocks {", ""),
            (f"    max_nr_units = {grid.int};", grid.source),
            ("    par_unit block {", ""), ("      memory_space shared {", ""), ("      }", ""),
            ("      par_group warps {", ""),
            (f"        max_nr_units = {per_block.int // warp.int};",
             f"{per_block.source} threads per block / {warp.int}"),
            ("        par_unit warp {", ""), ("          par_group threads {", ""),
            (f"            nr_units = {warp.int};", warp.source),
            ("            nvidia.hierarchy.blocks.block.threads.thread;", "reg and local"),
            ("          }", ""), ("        }", ""), ("      }", ""), ("    }", ""), ("  }", ""),
            ("}", ""), ("", ""), (f"device {name} {{", ""), ("  mem;", ""),
            ("  accelerator.host;", ""), ("  pcie;", ""), ("  ic;", ""), ("  l2;", ""),
            ("  smps;", ""), ("}", ""), ("", "")):
        lines.add(code, comment)
    _gpu_common(lines, q, ["global", "constant", "local"], ["global", "local"], measured,
                "smps.smp", clock, LATENCIES.get(major), fitted(parent, "cache l2"))
    nominal_shared: Statement = None if clock is None else (
        f"bandwidth = {smp_bytes} * {clock.value:.0f} MB/s;",
        f"per SM: its {spec.lsus} load/store units ({spec_source}) move a 4 B word each "
        "per cycle")
    shared = _measured_bandwidth(measured, "local", sms.int, "SM")
    if shared is not None and nominal_shared is not None and clock is not None:
        lines.compare("shared-memory bandwidth per SM", measured.rates["local"].value / sms.int,
                      smp_bytes * clock.value * 1e6, nominal_shared[1], (1e9, "GB/s"))
        shared = (shared[0], f"{shared[1]}; nominal {nominal_shared[0]} {nominal_shared[1]}")
    _block(lines, "memory on_chip", [
        ("space(shared);", ""), _capacity(Figure(shared_sm.value, shared_sm.source + " per SM")),
        ("nr_banks = 32;", "NVIDIA since Kepler: 32 banks of 4 B"), shared or nominal_shared,
        _measured_latency(measured, "latency_local", clock)])
    if l1 > 0:
        _block(lines, "cache l1", [
            ("space(global);", ""), ("space(local);", ""),
            _capacity(Figure(l1, f"{spec_source}: L1 + shared {spec.l1_shared_kb} kB per SM, "
                             "less the shared memory above")),
            ("cache_line_size = 128 B;", "NVIDIA: 128 B lines"),
            _measured_latency(measured, "latency_l1", clock),
            _measured_bandwidth(measured, "l1", sms.int, "SM")])
    _block(lines, "memory regs", [("space(reg);", ""), ("addressable = false;", ""),
                                  (f"capacity = {regs.int} * 32 bit;", regs.source)])
    lines.add("execution_group smps {")
    lines.add(f"  nr_units = {sms.int};", sms.source)
    lines.add("  execution_unit smp {")
    lines.add(f"    slots(block, {blocks_sm.int});", blocks_sm.source)
    lines.add(f"    slots(warp, {warps_sm});", f"{threads_sm.source} / {warp.int}")
    lines.add(f"    slots(thread, {threads_sm.int});", threads_sm.source)
    if clock is not None:
        lines.add(f"    clock_frequency = {_frequency(clock.value)};", clock.source)
    if parent == "hopper":
        lines.add('    performance_feedback("occupancy");',
                  f"hopper's occupancy rules ({name}_feedback.py)")
    lines.add("    on_chip;")
    if l1 > 0:
        lines.add("    l1;")
    lines.add("    regs;")
    lines.add("    execution_group partitions {")
    lines.add(f"      nr_units = {parts};", f"{spec_source}: {parts} processing blocks per SM")
    lines.add("      execution_unit partition {")
    lines.add(f"        slots(warp, {warps_sm // parts});",
              f"{warps_sm} warps per SM over {parts} processing blocks")
    thread = ("unit", "thread", "one thread per lane (as hopper)")
    _unit_group(lines, "        ", ("simd_group", "simd_unit"), ("alus", "alu"),
                (lanes, f"{spec_source}: {spec.fp32_lanes} FP32 lanes per SM"),
                [("group", "warp", "a warp executes in lock-step"), thread],
                [_ops(measured), "fp;"], _hopper_feedback(parent, "divergence",
                                                         "lanes of a warp on different paths"))
    _unit_group(lines, "        ", ("load_store_group", "load_store_unit"), ("lsus", "lsu"),
                (lsus, f"{spec_source}: {spec.lsus} LD/ST units per SM"),
                [("group", "warp", "the loads of a warp are issued together"), thread],
                ["perfect.memory_ops;"],
                _hopper_feedback(parent, "load_store_optimality", "coalescing, bank conflicts"))
    lines.add("      }")
    lines.add("    }")
    lines.add("  }")
    lines.add("}")
    lines.add("")
    nominal = sms.value * spec.fp32_lanes * 2 * (clock.value * 1e6 if clock else 0)
    _fp_block(lines, nominal, measured, "one float32 FMA per lane per cycle",
              (f"{spec.fp32_lanes} / {spec.fp64_per_clock}",
               f"{spec_source}: {spec.fp64_per_clock} FP64 results per clock per SM for its "
               f"{spec.fp32_lanes} FP32 lanes"))
    mapping = _mapping(name, "gpu", [
        "# A block is a work-group; the warps and threads of a block are its work-items,",
        "# threads along dimension 0 (a warp of the MCPL code is a warp of the hardware) and",
        "# warps along dimension 1 (as hopper).",
    ], {"blocks": ("work-group", 0), "warps": ("work-item", 1), "threads": ("work-item", 0)},
        {"global": ("global", "global"), "constant": ("constant", None),
         "shared": ("local", "local"), "local": ("private", None), "reg": ("private", None)},
        vector_width=4)
    return mapping
