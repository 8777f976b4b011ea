"""A CUDA mapping written by `mcl hwd detect` (from the recorded H100 query) is one the
CUDA code generator reads: it loads through mcl.codegen.mapping like hopper.cuda.toml,
and a kernel generated for the detected leaf compiles with NVRTC for its architecture."""

from __future__ import annotations

from pathlib import Path

from mcl import pipeline
from mcl.backends import load_mapping
from mcl.backends.cuda.nvrtc import compile_cuda
from mcl.cli import main
from mcl.commands.codegen import load_checked
from mcl.hdl.library import load_library
from mcl.resources import kernels_dir

DATA = Path(__file__).parent / "data"


def test_a_detected_h100_generates_cuda_that_nvrtc_compiles(tmp_path: Path) -> None:
    assert main(["hwd", "detect", "--from-query", str(DATA / "h100_query.json"), "-o",
                 str(tmp_path), "--name", "h100"]) == 0
    library = load_library([tmp_path], use_env=False)
    detected = library.get("h100")
    mapping = load_mapping(detected, language="cuda")
    assert mapping.file.endswith("h100.cuda.toml")
    assert mapping.dialect.name == "cuda"
    assert mapping.arch == "sm_90"  # the query's compute capability 9.0
    # hopper's abstractions mapped alike: the detected leaf specialises hopper
    hopper = load_mapping(library.get("hopper"), language="cuda")
    assert {g: (e.role, e.dim) for g, e in mapping.par_groups.items()} == {
        g: (e.role, e.dim) for g, e in hopper.par_groups.items()}
    program = load_checked(kernels_dir() / "matmul" / "hopper_v1.mcpl", [], library)
    generated = pipeline.generate(program, "h100", library, language="cuda")
    assert generated.language == "cuda" and "blockIdx.x" in generated.source
    compiled = compile_cuda(generated.source, "matmul.cu", mapping.arch,
                            warnings_as_errors=True)
    assert compiled.cubin.startswith(b"\x7fELF") and compiled.arch == "sm_90"
