"""The per-leaf OpenCL mapping files (paper 4.4 and 7): loading, validation with the file
and key in every error, and user descriptions that bring their own mapping."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends import load_mapping, parse_mapping
from mcl.backends.opencl.runner import run_function
from mcl.codegen.mapping import mapping_path, toml_module
from mcl.diagnostics import MclError
from mcl.hdl.library import load_library
from mcl.mcpl.loader import load_program
from mcl.resources import hwdescs_dir, kernels_dir

from .support import LEAVES, library

tomllib = toml_module()


@pytest.mark.parametrize("leaf", LEAVES)
def test_bundled_mapping_covers_the_leaf(leaf: str) -> None:
    hwd = library().get(leaf)
    mapping = load_mapping(hwd)
    assert Path(mapping.file) == hwdescs_dir() / f"{leaf}.opencl.toml" \
        == mapping_path(hwd, "opencl")
    assert set(mapping.par_groups) == {g.name for g in hwd.par_groups()}
    assert set(mapping.spaces) == {s.name for s in hwd.memory_spaces()}
    # hardware.md: GPUs map blocks to work-groups; CPUs and the Xeon Phi map threads.
    outer = hwd.par_groups()[0].name
    assert mapping.par_groups[outer].role == "work-group"
    assert all(mapping.par_groups[g.name].role == "work-item" for g in hwd.par_groups()[1:])
    assert (
        mapping.device_type
        == {"fermi": "gpu", "hopper": "gpu", "xeon_phi": "accelerator", "x86_avx512": "cpu"}[leaf]
    )


def test_gpu_shared_memory_is_local_with_a_local_barrier() -> None:
    mapping = load_mapping(library().get("fermi"))
    assert mapping.spaces["shared"].address_space == "local"
    assert mapping.spaces["shared"].barrier == "local"
    assert mapping.spaces["global"].address_space == "global"
    assert mapping.spaces["constant"].address_space == "constant"
    assert mapping.spaces["reg"].address_space == "private"
    # Threads of a warp are consecutive work-items (dimension 0), warps dimension 1.
    assert (mapping.par_groups["threads"].dim, mapping.par_groups["warps"].dim) == (0, 1)


def _fermi_data() -> dict:
    return tomllib.loads((hwdescs_dir() / "fermi.opencl.toml").read_text())


def _errors(data: dict) -> list[str]:
    with pytest.raises(MclError) as exc:
        parse_mapping(data, "/x/fermi.opencl.toml", library().get("fermi"))
    for d in exc.value.diagnostics:
        assert d.span is not None and d.span.file == "/x/fermi.opencl.toml"
    return [d.message for d in exc.value.diagnostics]


def test_unknown_par_group_names_file_key_and_suggestion() -> None:
    data = _fermi_data()
    data["par_groups"]["thread"] = data["par_groups"].pop("threads")
    messages = _errors(data)
    assert any(
        "/x/fermi.opencl.toml: par_groups.thread:" in m and "'threads'" in m for m in messages
    )
    assert any("par_group 'threads' of 'fermi' is not mapped" in m for m in messages)


def test_unknown_space_is_an_error() -> None:
    data = _fermi_data()
    data["spaces"]["sharde"] = data["spaces"].pop("shared")
    messages = _errors(data)
    assert any("spaces.sharde" in m and "'shared'" in m for m in messages)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("par_groups", "blocks", "role"), "workgroup", "par_groups.blocks.role"),
        (("par_groups", "blocks", "dim"), 3, "par_groups.blocks.dim"),
        (("par_groups", "threads", "role"), "global", "par_groups.threads.group_size"),
        (("spaces", "shared", "address_space"), "shared", "spaces.shared.address_space"),
        (("spaces", "shared", "barrier"), "yes", "spaces.shared.barrier"),
        (("spaces", "shared", "bariers"), "local", "spaces.shared.bariers: unknown key"),
        (("device_type",), "fpga", "device_type"),
        # the lanes are a par_group of work-items (vector components of one work-item)
        (("codegen", "lanes"), "blocks", "codegen.lanes: 'blocks' is not a par_group of role"),
        (("codegen", "lanes"), "lanez", "codegen.lanes: 'lanez' is not a par_group of role"),
    ],
)
def test_bad_values_name_their_key(path: tuple, value: object, expected: str) -> None:
    data = _fermi_data()
    table = data
    for key in path[:-1]:
        table = table.setdefault(key, {})
    table[path[-1]] = value
    assert any(expected in m for m in _errors(data))


def test_work_groups_cannot_lie_inside_work_items() -> None:
    data = _fermi_data()
    data["par_groups"]["blocks"] = {"role": "work-item", "dim": 1}
    data["par_groups"]["warps"] = {"role": "work-group", "dim": 0}
    assert any("par_groups.warps" in m and "cannot lie inside" in m for m in _errors(data))


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    hwd = library().get("fermi")
    with pytest.raises(MclError) as exc:
        load_mapping(hwd, tmp_path / "nothing.toml")
    assert exc.value.diagnostics[0].code == "codegen-no-mapping"
    bad = tmp_path / "fermi.opencl.toml"
    bad.write_text("device_type = \n")
    with pytest.raises(MclError) as exc:
        load_mapping(hwd, bad)
    assert exc.value.diagnostics[0].code == "codegen-mapping-syntax"
    assert str(bad) in exc.value.diagnostics[0].message


def test_user_description_brings_its_own_mapping(tmp_path: Path) -> None:
    """A leaf in a --hwd-path folder is generated with the mapping beside its .hdl."""
    text = (hwdescs_dir() / "x86_avx512.hdl").read_text()
    (tmp_path / "mycpu.hdl").write_text(text.replace("x86_avx512", "mycpu"))
    (tmp_path / "mycpu.opencl.toml").write_text(
        'device_type = "cpu"\n'
        "[par_groups]\n"
        'threads = { role = "work-group", dim = 0 }\n'
        'vectors = { role = "loop" }\n'  # lanes as a loop inside one work-item
        "[spaces]\n"
        'main = { address_space = "global", barrier = "global" }\n'
        'reg = { address_space = "private" }\n'
    )
    lib = load_library([tmp_path])
    assert lib.is_leaf("mycpu")
    program = load_program(kernels_dir() / "vectoradd" / "perfect.mcpl", library=lib)
    generated = pipeline.generate(pipeline.checked(program, lib), "mycpu", lib)
    assert "mycpu.opencl.toml" in generated.source
    assert "for (int " in generated.source  # the vectors became a loop
    n = 37
    a, b = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    out = run_function(
        generated, "vectoradd", {"n": n, "a": a, "b": b, "c": np.zeros(n, np.float32)}
    )
    np.testing.assert_array_equal(out.outputs["c"], a + b)


def test_lanes_as_vectors_are_opencl_only() -> None:
    data = tomllib.loads((hwdescs_dir() / "hopper.cuda.toml").read_text())
    data.setdefault("codegen", {})["lanes"] = "threads"
    with pytest.raises(MclError) as exc:
        parse_mapping(data, "/x/hopper.cuda.toml", library().get("hopper"), "cuda")
    assert any("codegen.lanes: lanes as vectors are generated for OpenCL only" in d.message
               for d in exc.value.diagnostics)
