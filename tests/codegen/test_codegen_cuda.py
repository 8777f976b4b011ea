"""The CUDA backend without a GPU: every shipped version at every leaf with a CUDA mapping
is generated and compiled with NVRTC (from PyPI) for sm_90 and for the oldest architecture
this NVRTC supports, warnings as errors; the CUDA mapping files; `#line` directives that
make compiler messages name the MCPL line; the host-sized shared memory layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import load_mapping, parse_mapping
from mcl.backends.cuda.nvrtc import check_arch, compile_cuda, supported_archs
from mcl.codegen.kernels import dynamic_shared_layout
from mcl.codegen.mapping import toml_module
from mcl.commands.codegen import load_checked
from mcl.diagnostics import MclError
from mcl.resources import hwdescs_dir

from .support import library, load, versions_at_leaves

tomllib = toml_module()

CASES = versions_at_leaves("cuda")


def _archs() -> list[str]:
    return sorted({"sm_90", f"sm_{min(supported_archs())}"})


def test_every_nvidia_leaf_and_version_is_covered() -> None:
    leaves = {leaf for _, leaf in CASES}
    assert leaves == {"fermi", "hopper"}
    # Versions written for hopper reach hopper only; those above nvidia reach both.
    assert any(p.name == "hopper_v1.mcpl" for p, _ in CASES)
    assert all(leaf == "hopper" for p, leaf in CASES if p.name.startswith("hopper"))
    assert all(leaf == "fermi" for p, leaf in CASES if p.name.startswith("fermi"))


@pytest.mark.parametrize(
    ("path", "leaf"), CASES, ids=[f"{p.parent.name}/{p.stem}-{leaf}" for p, leaf in CASES]
)
def test_shipped_version_compiles_with_nvrtc(path: Path, leaf: str) -> None:
    generated = pipeline.generate(load_checked(path, [], library()), leaf, library(),
                                language="cuda")
    assert generated.language == "cuda"
    source = generated.source
    assert "__kernel" not in source and "get_local_id" not in source
    assert re.search(r'^extern "C" __global__ void', source, re.M)
    for arch in _archs():
        compiled = compile_cuda(source, f"{path.stem}.cu", arch, warnings_as_errors=True)
        assert compiled.cubin.startswith(b"\x7fELF"), "NVRTC gives machine code, not PTX"


def test_line_directives_name_the_mcpl_line(tmp_path: Path) -> None:
    program = load(
        tmp_path,
        """
module k;
perfect void f(int n, float[n] a) {
  foreach (int i in n threads) {
    float never_read = 1.0;
    a[i] = 2.0;
  }
}
""",
    )
    source = pipeline.generate(program, "hopper", library(), language="cuda").source
    lines = source.split("\n")
    for k, text in enumerate(lines):
        if re.search(r"//\s*kernel\.mcpl:\d+$", text) and not text.lstrip().startswith("//"):
            line = re.search(r"kernel\.mcpl:(\d+)$", text).group(1)
            assert lines[k - 1] == f'#line {line} "kernel.mcpl"'
    # NVRTC's warning about the unread variable, as an error, names line 5 of the MCPL.
    with pytest.raises(MclError) as exc:
        compile_cuda(source, "k.cu", "sm_90", warnings_as_errors=True)
    assert "kernel.mcpl(5)" in str(exc.value)
    assert "never_read" in str(exc.value)


def test_cuda_mapping_reads_cuda_words() -> None:
    mapping = load_mapping(library().get("hopper"), language="cuda")
    assert Path(mapping.file) == hwdescs_dir() / "hopper.cuda.toml"
    assert mapping.language == "cuda" and mapping.arch == "sm_90"
    assert mapping.spaces["shared"].address_space == "local"  # the model's word
    assert mapping.spaces["reg"].address_space == "private"
    assert mapping.par_groups["blocks"].role == "work-group"
    assert mapping.par_groups["threads"].role == "work-item"
    assert load_mapping(library().get("fermi"), language="cuda").arch == "sm_20"


def test_cuda_mapping_rejects_opencl_words() -> None:
    data = tomllib.loads((hwdescs_dir() / "hopper.cuda.toml").read_text())
    data["par_groups"]["blocks"]["role"] = "work-group"
    data["spaces"]["shared"]["address_space"] = "local"
    data["arch"] = "90"
    with pytest.raises(MclError) as exc:
        parse_mapping(data, "/x/hopper.cuda.toml", library().get("hopper"), "cuda")
    messages = [d.message for d in exc.value.diagnostics]
    assert any("role: 'work-group' is not one of block, thread, global, loop" in m
               for m in messages)
    assert any("address_space: 'local' is not one of global, shared, constant, register" in m
               for m in messages)
    assert any("arch: '90' is not a CUDA architecture" in m for m in messages)


def test_leaf_without_cuda_mapping_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(MclError) as exc:
        load_mapping(library().get("xeon_phi"), language="cuda")
    assert "'xeon_phi' has no CUDA mapping" in str(exc.value)


def test_unsupported_architecture_is_one_line() -> None:
    with pytest.raises(MclError) as exc:
        check_arch("sm_20", "fermi.cuda.toml")
    text = str(exc.value)
    assert "needs architecture sm_20, which NVRTC" in text
    assert f"sm_{min(supported_archs())}" in text


def test_dynamic_shared_layout_aligns_each_array() -> None:
    offsets, total = dynamic_shared_layout([4 * 100, 4, 16])
    assert offsets == [0, 400, 416]
    assert total == 432
    assert all(o % 16 == 0 for o in offsets)
    assert dynamic_shared_layout([]) == ([], 0)


def test_shared_tiles_over_48_kb_go_to_dynamic_shared_memory() -> None:
    """hopper_v2 as `mcl tune` found it best (TILE_J = 256, TILE_K = 16: 49,664 B of shared
    tiles): static shared memory stops at 48 KB, so the tiles become dynamic shared memory,
    sized and opted in to at the launch. Fewer bytes stay static (the generated code as
    before)."""
    path = Path(__file__).resolve().parents[2] / "kernels" / "matmul" / "hopper_v2.mcpl"
    checked = load_checked(path, [], library())
    big = pipeline.generate(checked, "hopper", library(), language="cuda",
                            overrides={"TILE_J": 256, "TILE_K": 16})
    assert "extern __shared__" in big.source
    assert not re.search(r"__shared__ .*float l_[ab]\[", big.source)
    compiled = compile_cuda(big.source, "hopper_v2.cu", "sm_90", warnings_as_errors=True)
    assert compiled.cubin.startswith(b"\x7fELF")
    plan = big.functions[0].kernels[0]
    shared = [a for a in plan.args if a.kind == "local"]
    assert [a.name for a in shared] == ["l_a", "l_b"]
    small = pipeline.generate(checked, "hopper", library(), language="cuda")
    assert re.search(r"__shared__ .*float l_a\[", small.source)
    assert "extern __shared__" not in small.source
