"""The original MCL's code-generation facts (`codegen/<leaf>.lisp` beside its `hdl/`
folder): read as the leaf's OpenCL mapping where it has no `.opencl.toml`, and converted
once by `mcl hwd import-codegen`. The facts files here are written for these tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcl.backends import load_mapping, parse_mapping
from mcl.codegen.lisp_mapping import mapping_data, read_sexpr
from mcl.codegen.mapping import ParGroupMapping, SpaceMapping, toml_module
from mcl.diagnostics import MclError
from mcl.hdl.library import default_library, load_library
from mcl.resources import hwdescs_dir

tomllib = toml_module()

GPU_FACTS = """'(:target "fermi"
  :output "opencl"
  :device-type "CL_DEVICE_TYPE_GPU"
  :memory-spaces (("local" . ("" ""))
                  ("shared" . ("__local" "barrier(CLK_LOCAL_MEM_FENCE)"))
                  ("reg" . ("" ""))   ; private to a thread
                  ("global" . ("__global" "barrier(CLK_GLOBAL_MEM_FENCE)")))
  :pargroups (("threads" . ("get_local_id" "get_local_size"))
              ("warps" . ("get_local_id" "get_local_size"))
              ("blocks" . ("get_group_id" "get_group_size")))
  :dimensions (("get_local_id" . (3 :func)))
  :builtin-funcs (("atomicAdd" . "atomic_add")))
"""

CPU_FACTS = """'(:target "mycpu" :output "opencl" :device-type "CL_DEVICE_TYPE_CPU"
  :memory-spaces (("reg" . ("" "")) ("main" . ("__global" "barrier(CLK_GLOBAL_MEM_FENCE)")))
  :pargroups (("vectors" . ("get_local_id" "get_local_size"))
              ("threads" . ("get_group_id" "get_group_size"))))
"""

KERNEL = """
mycpu void scale(int n, float[n] out, float[n] x) {
  foreach (int t in (n + 15) / 16 threads) {
    foreach (int v in 16 vectors) {
      int i = t * 16 + v;
      if (i < n) {
        out[i] = 2.0 * x[i] + 1.0;
      }
    }
  }
}
"""

REFERENCE = '''
import numpy as np

FUNCTION = "scale"
SIZES = {"n": 37}
OUTPUTS = ("out",)


def inputs(sizes, rng):
    n = sizes["n"]
    return {"n": n, "out": np.zeros(n, dtype=np.float32),
            "x": rng.uniform(-1, 1, n).astype(np.float32)}


def reference(args):
    return {"out": (2.0 * np.asarray(args["x"], dtype=np.float64) + 1.0).astype(np.float32)}


def error_terms(args):
    return 2
'''


def original_layout(tmp_path: Path) -> Path:
    """input/hdl/mycpu.hdl (a copy of the bundled x86_avx512 under another name) and
    input/codegen/mycpu.lisp, as the original distribution lays them out."""
    hdl = tmp_path / "input" / "hdl"
    hdl.mkdir(parents=True)
    text = (hwdescs_dir() / "x86_avx512.hdl").read_text(encoding="utf-8")
    (hdl / "mycpu.hdl").write_text(text.replace("x86_avx512", "mycpu"), encoding="utf-8")
    (tmp_path / "input" / "codegen").mkdir()
    (tmp_path / "input" / "codegen" / "mycpu.lisp").write_text(CPU_FACTS, encoding="utf-8")
    return hdl


def test_dotted_pairs_read_as_lisp_reads_them():
    assert read_sexpr("'((\"a\" . (\"b\" \"c\")) (\"d\" . \"e\"))") == [
        ["a", "b", "c"], ["d", "e"]]


def test_the_facts_become_roles_dimensions_and_address_spaces():
    fermi = default_library().get("fermi")
    data, problems = mapping_data(GPU_FACTS, fermi)
    assert problems == []
    mapping = parse_mapping(data, "fermi.lisp", fermi)
    assert mapping.device_type == "gpu"
    # Groups sharing an index function take dimensions in the order listed.
    assert mapping.par_groups == {"threads": ParGroupMapping("work-item", 0),
                                  "warps": ParGroupMapping("work-item", 1),
                                  "blocks": ParGroupMapping("work-group", 0)}
    assert mapping.spaces["shared"] == SpaceMapping("local", "local")
    assert mapping.spaces["global"] == SpaceMapping("global", "global")
    assert mapping.spaces["reg"] == SpaceMapping("private", None)
    # fermi's read-only constant space is not in the file: OpenCL __constant.
    assert mapping.spaces["constant"] == SpaceMapping("constant", None)


@pytest.mark.parametrize("empty", ["(nil)", "nil", "(NIL)", "()"])
def test_the_original_distributions_empty_builtin_funcs_read_unchanged(empty):
    # The original fermi.lisp, intel_gpu.lisp and xeon_e5620.lisp say `:builtin-funcs
    # (nil)`: a list of one empty entry, Lisp's nil. It was refused ("found 'nil'").
    fermi = default_library().get("fermi")
    text = GPU_FACTS.replace('(("atomicAdd" . "atomic_add"))', empty)
    assert text != GPU_FACTS
    data, problems = mapping_data(text, fermi)
    assert problems == []
    assert data == mapping_data(GPU_FACTS, fermi)[0]


@pytest.mark.parametrize("change, complaint", [
    (('"get_group_id" "get_group_size"', '"get_num_groups" "x"'), "index function"),
    (('"__local"', '"__shared__"'), "qualifier"),
    (('"atomic_add"', '"atomic_inc"'), "atomicAdd"),
    (('CL_DEVICE_TYPE_GPU', 'CL_DEVICE_TYPE_FPGA'), ":device-type"),
])
def test_facts_mcl_cannot_follow_are_named(change, complaint):
    _, problems = mapping_data(GPU_FACTS.replace(*change), default_library().get("fermi"))
    assert len(problems) == 1 and complaint in problems[0]


def test_a_leaf_without_a_mapping_reads_the_original_facts(tmp_path):
    hdl = original_layout(tmp_path)
    library = load_library([str(hdl)])
    mapping = load_mapping(library.get("mycpu"))
    assert mapping.file.endswith("mycpu.lisp")
    assert mapping.par_groups["threads"] == ParGroupMapping("work-group", 0)
    assert mapping.par_groups["vectors"] == ParGroupMapping("work-item", 0)


def test_unreadable_facts_are_an_error_that_names_the_file(tmp_path):
    hdl = original_layout(tmp_path)
    (tmp_path / "input" / "codegen" / "mycpu.lisp").write_text("'(:target \"mycpu\"",
                                                               encoding="utf-8")
    with pytest.raises(MclError) as caught:
        load_mapping(load_library([str(hdl)]).get("mycpu"))
    (diagnostic,) = caught.value.diagnostics
    assert "mycpu.lisp" in diagnostic.message and "')' is missing" in diagnostic.message


def mcl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcl", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_import_codegen_writes_the_same_mapping_once(tmp_path):
    hdl = original_layout(tmp_path)
    done = mcl("hwd", "import-codegen", "input/codegen", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = hdl / "mycpu.opencl.toml"
    hwd = load_library([str(hdl)]).get("mycpu")
    from_toml = parse_mapping(tomllib.loads(written.read_text()), str(written), hwd)
    from_lisp = parse_mapping(*mapping_data(CPU_FACTS, hwd)[:1], "mycpu.lisp", hwd)
    assert (from_toml.par_groups, from_toml.spaces, from_toml.device_type) == (
        from_lisp.par_groups, from_lisp.spaces, from_lisp.device_type)
    again = mcl("hwd", "import-codegen", "input/codegen", cwd=tmp_path)
    assert again.returncode == 1 and "--force" in again.stderr


def test_a_kernel_runs_on_a_leaf_known_only_from_the_original_facts(tmp_path):
    hdl = original_layout(tmp_path)
    (tmp_path / "scale.mcl").write_text(KERNEL, encoding="utf-8")
    (tmp_path / "reference.py").write_text(REFERENCE, encoding="utf-8")
    done = mcl("run", "--hwd-path", str(hdl), "--target", "mycpu", "--verify",
               "--format", "json", "-D", "n=37", "scale.mcl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["verified"] is True and document["target"] == "mycpu"
    assert [(o["name"], o["shape"], o["ok"]) for o in document["outputs"]] == [
        ("out", [37], True)]
