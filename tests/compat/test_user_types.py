"""User types end to end: numpy structured arrays in the interpreter and on the OpenCL
device (the device layout from one place, mcl.codegen.struct_layout), verification per
field with its own error bound, and one reference for `mcl run --interp` and
`--target`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcl import pipeline
from mcl.codegen.struct_layout import struct_dtype
from mcl.diagnostics import MclError
from mcl.interp import run_function as interpret
from mcl.verify import Reference, verify
from tests.codegen.support import library, load, run

MIXED = """
type Inner {
  byte tag;
  double weight;
}

type Mixed {
  byte flag;
  float x;
  double y;
  int[3] v;
  Inner inner;
}

perfect void update(int n, Mixed[n] items, float[n] sums) {
  foreach (int i in n threads) {
    items[i].x = items[i].x * 2.0;
    items[i].y = items[i].y + toDouble(items[i].v[2]);
    items[i].v[0] = items[i].v[1] + i;
    items[i].inner.weight = items[i].inner.weight * 0.5;
    sums[i] = items[i].x + toFloat(items[i].flag) + toFloat(items[i].inner.tag);
  }
}
"""

OFFSETS_KERNEL = """
__kernel void layout(__global long* out) {
    out[0] = sizeof(Mixed);
    out[1] = offsetof(Mixed, flag);
    out[2] = offsetof(Mixed, x);
    out[3] = offsetof(Mixed, y);
    out[4] = offsetof(Mixed, v);
    out[5] = offsetof(Mixed, inner);
    out[6] = sizeof(Inner);
    out[7] = offsetof(Inner, weight);
}
"""


def test_the_layout_is_the_device_compilers(tmp_path):
    """sizeof and offsetof of the generated structs, asked of PoCL's OpenCL compiler."""
    import pyopencl as cl

    from mcl.backends.opencl.runner import select_device

    checked = pipeline.checked(load(tmp_path, MIXED), library())
    generated = pipeline.generate(checked, "x86_avx512", library())
    typedefs = generated.source[:generated.source.index("// update")]
    source = "#define offsetof(t, f) ((long)&(((t*)0)->f))\n" + typedefs + OFFSETS_KERNEL
    device = select_device()
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    program = cl.Program(context, source).build()
    out = np.zeros(8, dtype=np.int64)
    buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    program.layout(queue, (1,), None, buffer)
    cl.enqueue_copy(queue, out, buffer)
    layout = struct_dtype("Mixed", {t.name: t for t in generated.types})
    inner = layout["inner"]
    assert out.tolist() == [layout.itemsize, layout.fields["flag"][1], layout.fields["x"][1],
                            layout.fields["y"][1], layout.fields["v"][1],
                            layout.fields["inner"][1], inner.itemsize,
                            inner.fields["weight"][1]]


def mixed_inputs(n: int, packed: bool) -> dict:
    """Mixed values in a dtype of the user's choosing: packed and in another order."""
    inner = np.dtype([("weight", "f8"), ("tag", "u1")])
    fields = [("v", "i4", (3,)), ("y", "f8"), ("inner", inner), ("x", "f4"), ("flag", "u1")]
    dtype = np.dtype(fields, align=not packed)
    rng = np.random.default_rng(5)
    items = np.zeros(n, dtype=dtype)
    items["flag"] = rng.integers(0, 200, n)
    items["x"] = rng.uniform(-1, 1, n)
    items["y"] = rng.uniform(-1, 1, n)
    items["v"] = rng.integers(-50, 50, (n, 3))
    items["inner"]["tag"] = rng.integers(0, 9, n)
    items["inner"]["weight"] = rng.uniform(0, 4, n)
    return {"n": n, "items": items, "sums": np.zeros(n, dtype=np.float32)}


@pytest.mark.parametrize("packed", [True, False])
def test_structured_arrays_give_the_same_results_in_the_interpreter_and_on_the_device(
        tmp_path, packed):
    program = load(tmp_path, MIXED)
    args = mixed_inputs(13, packed)
    before = args["items"].copy()
    copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    interpreted = interpret(program, "update", copies)
    checked = pipeline.checked(program, library())
    device = run(pipeline.generate(checked, "x86_avx512", library()), "update", args)
    for got in (interpreted["items"], device["items"]):
        assert got.dtype == before.dtype  # the caller's own dtype comes back
        np.testing.assert_array_equal(got["x"], before["x"] * 2)
        np.testing.assert_array_equal(got["y"], before["y"] + before["v"][:, 2])
        np.testing.assert_array_equal(got["v"][:, 0], before["v"][:, 1] + np.arange(13))
        np.testing.assert_array_equal(got["inner"]["weight"], before["inner"]["weight"] / 2)
        np.testing.assert_array_equal(got["inner"]["tag"], before["inner"]["tag"])
    expected_sums = (before["x"] * 2 + before["flag"] + before["inner"]["tag"]).astype(
        np.float32)
    np.testing.assert_allclose(interpreted["sums"], expected_sums, rtol=1e-6)
    np.testing.assert_allclose(device["sums"], expected_sums, rtol=1e-6)


def test_an_argument_without_the_types_fields_is_an_error(tmp_path):
    program = load(tmp_path, MIXED)
    args = mixed_inputs(4, packed=True)
    args["items"] = np.zeros(4, dtype=[("x", "f4")])
    with pytest.raises(MclError) as interp_error:
        interpret(program, "update", args)
    assert "not those of Mixed" in str(interp_error.value.diagnostics[0])
    with pytest.raises(MclError) as device_error:
        checked = pipeline.checked(program, library())
        run(pipeline.generate(checked, "x86_avx512", library()), "update", args)
    assert device_error.value.diagnostics[0].code == "run-struct-fields"


COMPLEX = """
type Complex {
  float real;
  float imag;
}

perfect void cmul(int n, Complex[n] out, Complex[n] a, Complex[n] b) {
  foreach (int i in n threads) {
    out[i].real = a[i].real * b[i].real - a[i].imag * b[i].imag;
    out[i].imag = a[i].real * b[i].imag + a[i].imag * b[i].real;
  }
}
"""

COMPLEX_REFERENCE = '''
import numpy as np

FUNCTION = "cmul"
SIZES = {"n": 100}
OUTPUTS = ("out",)
COMPLEX = np.dtype([("real", np.float32), ("imag", np.float32)])


def inputs(sizes, rng):
    n = sizes["n"]

    def values():
        z = np.zeros(n, dtype=COMPLEX)
        z["real"], z["imag"] = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        return z

    return {"n": n, "out": np.zeros(n, dtype=COMPLEX), "a": values(), "b": values()}


def reference(args):
    a, b = args["a"], args["b"]
    z = (a["real"].astype(np.float64) + 1j * a["imag"]) * (b["real"] + 1j * b["imag"])
    out = np.zeros(len(a), dtype=COMPLEX)
    out["real"], out["imag"] = z.real, z.imag
    return {"out": out}


def error_bound(args, outputs):
    # Two products and a sum or difference per field: 3 roundings of |a b| + |c d|.
    a, b = args["a"], args["b"]
    u = 2.0 ** -24
    return {"out.real": 4 * u * (np.abs(a["real"] * b["real"]) + np.abs(a["imag"] * b["imag"])),
            "out.imag": 4 * u * (np.abs(a["real"] * b["imag"]) + np.abs(a["imag"] * b["real"]))}
'''


def test_one_reference_drives_the_interpreter_and_the_device_field_by_field(tmp_path):
    (tmp_path / "cmul.mcl").write_text(COMPLEX, encoding="utf-8")
    (tmp_path / "reference.py").write_text(COMPLEX_REFERENCE, encoding="utf-8")
    for how in (["--interp"], ["--target", "fermi", "--verify"]):
        done = subprocess.run([sys.executable, "-m", "mcl", "run", "--format", "json", *how,
                               "-D", "n=37", "cmul.mcl"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        document = json.loads(done.stdout)
        assert document["verified"] is True
        outputs = document["outputs"]
        assert [(o["name"], o["shape"], o["ok"], o["rule"]) for o in outputs] == [
            ("out.real", [37], True, "error_bound()"), ("out.imag", [37], True, "error_bound()")]
        assert all(0 < o["bound"] < 1e-5 for o in outputs)


def test_a_wrong_field_fails_alone():
    class Module:
        FUNCTION, SIZES, OUTPUTS, TOLERANCE = "f", {}, ("out",), {"atol": 1e-6}

    dtype = np.dtype([("real", "f4"), ("imag", "f4")])
    expected = np.zeros(3, dtype=dtype)
    expected["real"], expected["imag"] = [1, 2, 3], [4, 5, 6]
    got = expected.copy()
    got["imag"][1] = 5.5
    checks = verify(Reference(Path("reference.py"), Module), {"out": expected},  # type: ignore[arg-type]
                    {"out": got}, {})
    assert [(c.name, c.ok, c.mismatches) for c in checks] == [
        ("out.real", True, 0), ("out.imag", False, 1)]
