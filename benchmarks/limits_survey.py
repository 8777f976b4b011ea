"""Which shipped versions a leaf's limits make impossible, and whether `mcl check` says so
(docs/checker.md, rule 8, `mcpl-block-resources`; the paper's section 5: the limits of a
level are learnt while refining, not from the device at run time).

For every kernel of kernels/*/ at every leaf it translates to (hopper, fermi, xeon_phi,
x86_avx512: the leaves at or below its level), with its constants as written, as each
`.tuned.toml` entry for that leaf sets them, and at its own leaf with every configuration
of its `// tune:` space that the `// require:` rules allow: the check's errors (with the
application's benchmark sizes as values, benchmarks/apps/), the occupancy figures (shared
memory per block, threads per block, registers per thread: NVRTC's count for sm_90 where
the CUDA backend compiles it, else the estimate) and, at hopper, the generated CUDA: the
shared arrays' bytes, whether they go to dynamic shared memory (over 48 KB per block:
`extern __shared__`, the runner raises cudaFuncAttributeMaxDynamicSharedMemorySize) and
whether NVRTC builds it.

    PYTHONPATH=. python benchmarks/limits_survey.py [--apps matmul,spmv] [--no-space]

Prints one row per case and a summary; exit status 1 when a case over a limit is not
refused by the check, or a CUDA source over 48 KB of static shared memory is made.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

LEAVES = ("hopper", "fermi", "xeon_phi", "x86_avx512")
STATIC_SHARED_LIMIT = 48 * 1024  # CUDA: static __shared__ per block


@dataclass
class Case:
    app: str
    version: str
    leaf: str
    label: str  # "as written", "tuned", or the configuration
    source: str  # the kernel's text with the configuration's constants


def leaves_of(level: str, library: object) -> list[str]:
    """The leaves at or below `level`."""
    from mcl.hdl.library import HwdLibrary

    assert isinstance(library, HwdLibrary)
    return [leaf for leaf in LEAVES
            if leaf == level or level in library.ancestors(leaf)]


def with_constants(text: str, config: dict[str, object]) -> str:
    for name, value in config.items():
        text, n = re.subn(rf"(const\s+\w+\s+{name}\s*=\s*)[^;]+;", rf"\g<1>{value};", text)
        assert n == 1, f"constant {name} not found once"
    return text


def tuned_configs(path: Path, leaf: str) -> list[dict[str, object]]:
    tuned = path.with_suffix(".tuned.toml")
    if not tuned.is_file():
        return []
    entries = tomllib.loads(tuned.read_text())["config"]
    return [e["constants"] for e in entries if e.get("target") == leaf]


def space_configs(path: Path, library: object) -> list[dict[str, object]]:
    """The `// tune:` space less what its `// require:` rules forbid (what `mcl tune`
    hands the description's own rules)."""
    from mcl.mcpl.loader import load_program
    from mcl.tune.space import constant_values, rule_problems, space_from_source

    module = load_program(path, (), library).main
    space = space_from_source(module, path, {})
    if not space.params:
        return []
    return [config for config in space.configurations()
            if not rule_problems(space, constant_values(module.constants, config))]


def cases(apps: list[str], library: object, spaces: bool) -> list[Case]:
    out = []
    for folder in sorted((ROOT / "kernels").iterdir()):
        if not folder.is_dir() or (apps and folder.name not in apps):
            continue
        for path in sorted(folder.glob("*.mcpl")):
            level = "perfect" if path.stem == "perfect" else path.stem.rsplit("_v", 1)[0]
            text = path.read_text()
            for leaf in leaves_of(level, library):
                out.append(Case(folder.name, path.stem, leaf, "as written", text))
                for config in tuned_configs(path, leaf):
                    out.append(Case(folder.name, path.stem, leaf, "tuned " + _label(config),
                                    with_constants(text, config)))
                if spaces and leaf == level:
                    for config in space_configs(path, library):
                        out.append(Case(folder.name, path.stem, leaf, _label(config),
                                        with_constants(text, config)))
    return out


def _label(config: dict[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def sizes(app: str, leaf: str) -> dict[str, int]:
    """The application's first benchmark size on the leaf's kind of device; none for a
    kernel that is no application of Table IV (vectoradd): its constants decide."""
    if not (ROOT / "benchmarks" / "apps" / f"{app}.py").is_file():
        return {}
    module = importlib.import_module(f"apps.{app}")
    kind = "cpu" if leaf == "x86_avx512" else "gpu"
    return dict(module.sizes(kind)[0])


@dataclass
class Result:
    errors: list[str]  # "code: message"
    occupancy: dict[str, float]
    shared_cuda: int | None = None  # bytes of shared arrays of constant size, in the CUDA
    dynamic: bool | None = None  # whether the CUDA source puts them in dynamic shared memory
    built: str | None = None  # NVRTC: "ok" or its first line of error


def survey(case: Case, library: object, folder: Path) -> Result:
    """The check of `case` at its leaf (translated there when written above it), then the
    occupancy analyses with the application's sizes and the check's refusals from them
    (the part of `mcl check -D ...`'s feedback that decides, mcl.feedback.block_refusal)."""
    from mcl import pipeline
    from mcl.feedback.block_refusal import refused_blocks
    from mcl.feedback.registry import analyse_findings
    from mcl.hdl.library import HwdLibrary

    assert isinstance(library, HwdLibrary)
    path = folder / case.app / f"{case.version}.mcpl"
    path.parent.mkdir(exist_ok=True)
    path.write_text(case.source)
    level = None if case.version.startswith(case.leaf) else case.leaf
    found = pipeline.check_source(path, (), library, level)
    errors = [f"{d.code}: {d.message}" for d in found.diagnostics if d.severity.name == "ERROR"]
    result = Result(errors, {})
    checked = found.checked()
    if errors or checked is None:
        return result
    hwd = library.get(case.leaf)
    values = sizes(case.app, case.leaf)
    for function in checked.program.main.functions:
        if function.hwd != case.leaf:
            continue
        findings = analyse_findings(function, checked, hwd, values, only=["functions"])
        result.errors += [f"{d.code}: {d.message}"
                          for d in refused_blocks(findings, {function.name: case.leaf})]
        for f in findings:
            if f.code == "occupancy":
                result.occupancy = {k: v.numeric for k, v in f.message.values
                                    if k in ("threads_per_block", "shared_bytes_per_block",
                                             "registers_per_thread",
                                             "registers_per_thread_estimate")}
    if case.leaf == "hopper" and not result.errors:
        _cuda(checked, library, result)
    return result


def _cuda(checked: object, library: object, result: Result) -> None:
    from mcl import pipeline
    from mcl.backends.cuda.nvrtc import compile_cuda
    from mcl.diagnostics import MclError

    generated = pipeline.generate(checked, "hopper", library, language="cuda")  # type: ignore[arg-type]
    source = generated.source
    static = sum(int(n) * 4 for n in _static_shared(source))
    result.dynamic = "extern __shared__" in source
    result.shared_cuda = static
    try:
        compile_cuda(source, "k.cu", "sm_90")
        result.built = "ok"
    except MclError as exc:
        result.built = str(exc).splitlines()[0][:120]


def _static_shared(source: str) -> list[int]:
    """The element counts of the static `__shared__` arrays, their sizes evaluated with
    the source's `#define`d constants (C's integer division)."""
    names: dict[str, int] = {}
    for name, expr in re.findall(r"^#define (\w+) (\(.*?\))\s*(?://.*)?$", source, re.M):
        try:
            names[name] = int(eval(expr.replace("/", "//"), {}, dict(names)))  # noqa: S307
        except (NameError, SyntaxError):
            pass
    out = []
    for match in re.finditer(r"__shared__\s+(?:float|int|unsigned int)\s+\w+((?:\[[^\]]+\])+)",
                             source):
        dims = re.findall(r"\[([^\]]+)\]", match.group(1))
        out.append(int(eval("*".join(f"({d.replace('/', '//')})" for d in dims),  # noqa: S307
                            {}, dict(names))))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", default="", help="comma-separated applications (all)")
    parser.add_argument("--no-space", action="store_true",
                        help="leave out the configurations of the // tune: spaces")
    args = parser.parse_args()
    from mcl.cli import _register_count
    from mcl.feedback.compiler_registers import use_counter
    from mcl.hdl.library import default_library

    use_counter(_register_count)  # NVRTC's count, as `mcl check` uses it
    library = default_library()
    apps = [a for a in args.apps.split(",") if a]
    all_cases = cases(apps, library, not args.no_space)
    refused = over_static = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in all_cases:
            try:
                r = survey(case, library, Path(tmp))
            except Exception as exc:  # noqa: BLE001 a case the survey cannot read
                failed += 1
                print(f"{case.app:<12} {case.version:<16} {case.leaf:<10} {case.label}: "
                      f"not surveyed ({type(exc).__name__}: {str(exc)[:100]})")
                continue
            limit_errors = [e for e in r.errors if e.startswith(
                ("mcpl-memory-capacity", "mcpl-block-resources", "mcpl-foreach-limit"))]
            refused += bool(limit_errors)
            figures = " ".join(f"{k}={int(v):,}" for k, v in r.occupancy.items())
            cuda = ""
            if r.shared_cuda is not None:
                cuda = (f" | CUDA static shared {r.shared_cuda:,} B, dynamic "
                        f"{'yes' if r.dynamic else 'no'}, NVRTC {r.built}")
                over_static += r.shared_cuda > STATIC_SHARED_LIMIT
            verdict = ("REFUSED " + "; ".join(limit_errors) if limit_errors else
                       "errors " + "; ".join(r.errors) if r.errors else "ok")
            print(f"{case.app:<12} {case.version:<16} {case.leaf:<10} {case.label}: "
                  f"{verdict} | {figures}{cuda}", flush=True)
    print(f"\n{len(all_cases)} cases: {refused} refused by the check for a limit, "
          f"{over_static} CUDA sources over {STATIC_SHARED_LIMIT:,} B of static shared "
          f"memory, {failed} not surveyed")
    return 1 if over_static else 0


if __name__ == "__main__":
    sys.exit(main())
