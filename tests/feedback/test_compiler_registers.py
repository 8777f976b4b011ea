"""Registers per thread for occupancy: NVIDIA's compiler's count where NVRTC compiles the
kernel for its level (mcl.feedback.compiler_registers; nvidia-cuda-nvrtc is part of the
test extra), kept per generated source in the process and on disk; else the estimate,
which no occupancy message names as the limit (docs/feedback.md, "Occupancy")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import by_program
from mcl.backends.cuda import line_instructions
from mcl.backends.cuda import registers as compiled
from mcl.backends.cuda.cubin import register_counts
from mcl.backends.cuda.nvrtc import compile_cuda
from mcl.cli import main
from mcl.feedback import compiler_registers
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

ROOT = Path(__file__).resolve().parents[2]
HOPPER = sorted((ROOT / "kernels").glob("*/hopper_*.mcpl"))


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk cache of the test's own, and nothing kept in the process from before."""
    monkeypatch.setenv("MCL_CACHE_DIR", str(tmp_path / "cache"))
    compiled._memory.clear()


def _occupancy(path: Path) -> tuple[dict, str, int]:
    """The occupancy message's figures and text for the kernel of `path`, and what NVRTC
    gives its kernels (the most of them), compiled here on its own."""
    library = default_library()
    program = load_program(path, (), library)
    checked = pipeline.check(program, library)
    function = program.main.functions[-1]
    messages = analyse(function, checked, library.get(function.hwd), {},
                       only=["functions"])
    (occupancy,) = [m for m in messages if m.code == "occupancy"]
    generated = pipeline.generate(checked, "hopper", library, language="cuda")
    counts = register_counts(compile_cuda(generated.source, "k.cu", "sm_90").cubin)
    plan = generated.function(function.name)
    assert plan is not None
    return ({k: v.numeric for k, v in occupancy.values}, occupancy.text,
            max(counts[k.name] for k in plan.kernels))


def test_occupancy_uses_the_compiler_s_count() -> None:
    """matmul hopper (v1): NVRTC gives 120 registers per thread; the estimate said 111."""
    figures, text, count = _occupancy(ROOT / "kernels" / "matmul" / "hopper_v1.mcpl")
    assert figures["registers_per_thread"] == count
    assert "registers_per_thread_estimate" not in figures
    assert f"{count} registers per thread, the compiler's count" in text


@pytest.mark.slow
@pytest.mark.parametrize("path", HOPPER, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_the_count_is_the_compiler_s_on_every_shipped_hopper_kernel(path: Path) -> None:
    figures, _, count = _occupancy(path)
    assert figures["registers_per_thread"] == min(count, 255)


def test_a_count_is_compiled_once_and_kept_on_disk(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    path = ROOT / "kernels" / "matmul" / "hopper_v1.mcpl"
    figures, _, count = _occupancy(path)
    assert len(list((tmp_path / "cache" / "registers").glob("*" + by_program.SUFFIX))) == 1

    def no_compiler(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr("mcl.backends.cuda.nvrtc.compile_cuda", no_compiler)
    compiled._memory.clear()  # the disk alone
    library = default_library()
    program = load_program(path, (), library)
    checked = pipeline.check(program, library)
    function = program.main.functions[-1]
    messages = analyse(function, checked, library.get(function.hwd), {}, only=["functions"])
    (occupancy,) = [m for m in messages if m.code == "occupancy"]
    assert occupancy.value_map["registers_per_thread"].numeric == count


def test_the_disk_cache_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(by_program, "DISK_ENTRIES", 2)
    for key in ("a", "b", "c"):
        compiled.write_kept(key, {"k": 1})
    kept = sorted(p.stem for p in (tmp_path / "cache" / "registers").glob("*" + by_program.SUFFIX))
    assert len(kept) == 2 and compiled.read_kept(kept[0]) == {"k": 1}


def test_without_the_compiler_the_estimate_limits_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """convolution hopper (v2): the estimate, 135 registers per thread, would allow 3
    blocks per SM (12 warps) where the compiler's 64 allow 8 (the device ran 8, docs/
    validation.md). Without NVRTC the message states the estimate and what it would
    allow, but is not "limited by registers" and advises no fewer registers."""
    monkeypatch.setattr(compiler_registers, "compiler_registers", lambda facts: None)
    library = default_library()
    path = ROOT / "kernels" / "convolution" / "hopper_v2.mcpl"
    program = load_program(path, (), library)
    function = program.main.functions[-1]
    messages = analyse(function, pipeline.check(program, library),
                       library.get(function.hwd), {}, only=["functions"])
    (occupancy,) = [m for m in messages if m.code == "occupancy"]
    assert "limited by registers" not in occupancy.text
    assert "fewer values per thread in registers" not in occupancy.text
    assert "an estimate that limits nothing" in occupancy.text
    figures = {k: v.numeric for k, v in occupancy.values}
    assert figures["registers_per_thread_estimate"] > 64
    assert figures["blocks_per_sm_estimated_registers"] < figures["blocks_per_sm"]
    assert "0.5 to 6.5 times" in (occupancy.hint or "")


def test_the_arch_is_read_as_code_generation_reads_it() -> None:
    """`stated_arch` reads the mapping file alone (no code generators imported): the same
    `arch` as the validated mapping, and the path `mapping_path` names."""
    from mcl.backends import load_mapping
    from mcl.codegen.mapping import mapping_path

    library = default_library()
    for name in ("hopper", "fermi", "gpu"):
        hwd = library.get(name)
        expected = load_mapping(hwd, language="cuda").arch if \
            mapping_path(hwd, "cuda").is_file() else None
        assert compiled.stated_arch(hwd) == expected


def test_one_compile_gives_the_registers_and_the_listing(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """A cold `mcl check` at a CUDA leaf with sizes asks for the register count and the
    time model's machine code per line: NVRTC compiles the generated source once for
    both (two compiles of a fuzzer's deep loop nest took it past its CPU budget)."""
    if line_instructions._nvdisasm() is None:
        pytest.fail("nvdisasm (nvidia-cuda-nvdisasm, in the test extra) is missing")
    compiled._cubins.clear()
    line_instructions._memory.clear()
    made: list[str] = []
    compile_once = compiled.run_within

    # Each compile runs in a child under its budget (mcl.cpu_budget): counted here, in
    # this process, where it is asked for.
    def counted(work: Callable[[], bytes], seconds: float) -> bytes:
        made.append("compile")
        return compile_once(work, seconds)
    monkeypatch.setattr(compiled, "run_within", counted)
    path = ROOT / "kernels" / "matmul" / "hopper_v1.mcpl"
    assert main(["check", str(path), "--level", "hopper", "--feedback", "-v",
                 "-D", "n=1024", "-D", "m=1024", "-D", "p=1024"]) == 0
    out = capsys.readouterr().out
    assert "the compiler's count" in out  # the registers came from the compile
    assert len(line_instructions._memory) == 1  # and so did the listing
    assert len(made) == 1, made
