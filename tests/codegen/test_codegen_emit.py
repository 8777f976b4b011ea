"""The OpenCL emitter on hand-written leaf-level kernels, each run on the PoCL device and
compared with numpy: array forms (tiles, nested arrays, views), user types and functions
specialised per address space, __local memory and barriers, built-ins and atomics, guards
that keep barriers reachable, loops, several kernels per function and host statements."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mcl.backends import load_mapping
from mcl.backends.opencl.runner import OpenCLSession
from mcl.codegen import emit_opencl
from mcl.diagnostics import MclError

from .support import generate, library, load, run

TILES = """
x86_avx512 void tiles(int n, main int[2,2][3,3] d2, main int[6,6] src,
                      main float[n] a, main float[n] out,
                      main float[3][4] img, main float[4][3] imgT) {
  foreach (int t in 4 threads) {
    foreach (int v in 9 vectors) {
      int ti = t / 2;
      int tj = t % 2;
      int ei = v / 3;
      int ej = v % 3;
      d2[ti, tj][ei, ej] = src[ti * 3 + ei, tj * 3 + ej];
      if (v < 3) {
        imgT[t][v] = img[v][t];
      }
    }
  }
  foreach (int t in n / 4 threads) {
    foreach (int v in 4 vectors) {
      out as float[n / 4][4] out4;
      float[8] buf as float[2][4] buf2;
      buf2[1][v] = a[t * 4 + v];
      out4[t][v] = buf[4 + v] * 2.0;
    }
  }
}
"""


def test_tiles_nested_arrays_and_views(tmp_path: Path) -> None:
    g = generate(load(tmp_path, TILES), "x86_avx512")
    # Tile-major linearisation, readable: the MCPL index expressions stay visible.
    assert (
        "d2[((ti * 2 + tj) * 3 + ei) * 3 + ej] = src[(ti * 3 + ei) * 6 + (tj * 3 + ej)]" in g.source
    )
    assert "__global float* const out4 = out;" in g.source
    assert [k.name for k in g.functions[0].kernels] == ["tiles_0", "tiles_1"]
    n = 12
    src = np.arange(36, dtype=np.int32).reshape(6, 6)
    img = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = np.linspace(-1, 1, n, dtype=np.float32)
    out = run(
        g,
        "tiles",
        {
            "n": n,
            "d2": np.zeros(36, np.int32),
            "src": src,
            "a": a,
            "out": np.zeros(n, np.float32),
            "img": img,
            "imgT": np.zeros((4, 3), np.float32),
        },
    )
    tiled = src.reshape(2, 3, 2, 3).transpose(0, 2, 1, 3)  # [ti, tj, ei, ej]
    np.testing.assert_array_equal(out["d2"], tiled.reshape(-1))
    np.testing.assert_array_equal(out["imgT"], img.T)
    np.testing.assert_array_equal(out["out"], 2 * a)


CPLX = """
type Complex {
  float re;
  float im;
}

perfect void assign(Complex r, float re, float im) {
  r.re = re;
  r.im = im;
}

perfect float norm2(Complex z) {
  return z.re * z.re + z.im * z.im;
}

hopper void cmul(int n, global Complex[n] z, global Complex[n] a, global Complex[n] b,
                 global float[n] nz) {
  foreach (int bl in (n + 31) / 32 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        int i = bl * 32 + t;
        if (i < n) {
          Complex tmp;
          assign(tmp, a[i].re * b[i].re - a[i].im * b[i].im,
                 a[i].re * b[i].im + a[i].im * b[i].re);
          assign(z[i], tmp.re, tmp.im);
          nz[i] = norm2(z[i]);
        }
      }
    }
  }
}
"""


def test_user_types_and_functions_per_address_space(tmp_path: Path) -> None:
    g = generate(load(tmp_path, CPLX), "hopper")
    assert re.search(r"typedef struct \{.*\n    float re;\n    float im;\n\} Complex;", g.source)
    # `assign` writes its Complex: passed by reference, once private and once __global.
    assert "void assign(Complex* r, float re, float im)" in g.source
    assert "void assign_g(__global Complex* r, float re, float im)" in g.source
    assert "assign_g(&z[i], tmp.re, tmp.im);" in g.source
    assert "float norm2(Complex z)" in g.source  # read only: by value
    n = 45
    rng = np.random.default_rng(1)
    dtype = np.dtype([("re", np.float32), ("im", np.float32)])
    a, b = (np.zeros(n, dtype) for _ in range(2))
    for arr in (a, b):
        arr["re"], arr["im"] = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    out = run(
        g, "cmul", {"n": n, "z": np.zeros(n, dtype), "a": a, "b": b, "nz": np.zeros(n, np.float32)}
    )
    expected = (a["re"] + 1j * a["im"]) * (b["re"] + 1j * b["im"])
    np.testing.assert_allclose(out["z"]["re"], expected.real, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["z"]["im"], expected.imag, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["nz"], np.abs(expected) ** 2, rtol=1e-5, atol=1e-6)


BLOCKSUM = """
fermi void blocksum(int nb, global float[nb * 64] x, global float[nb] out) {
  foreach (int b in nb blocks) {
    shared float[64] s;
    foreach (int w in 2 warps) {
      foreach (int t in 32 threads) {
        int i = w * 32 + t;
        s[i] = x[b * 64 + i];
        barrier(shared);
        if (i == 0) {
          float sum = 0.0;
          for (int k = 0; k < 64; k++) {
            sum += s[k];
          }
          out[b] = sum;
        }
      }
    }
  }
}
"""


def test_shared_memory_and_barriers(tmp_path: Path) -> None:
    program = load(tmp_path, BLOCKSUM)
    g = generate(program, "fermi")
    assert "__local float s[64];" in g.source
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in g.source
    assert "__attribute__((reqd_work_group_size(32, 2, 1)))" in g.source
    kernel = g.functions[0].kernels[0]
    assert [int(e.value) for e in kernel.local] == [32, 2]  # type: ignore[attr-defined]
    nb = 5
    x = np.random.default_rng(2).uniform(-1, 1, nb * 64).astype(np.float32)
    out = run(g, "blocksum", {"nb": nb, "x": x, "out": np.zeros(nb, np.float32)})
    np.testing.assert_allclose(out["out"], x.reshape(nb, 64).sum(axis=1), rtol=1e-5, atol=1e-5)
    # emit_opencl gives the same code for one function of the checked program.
    hwd = library().get("fermi")
    assert emit_opencl(program.main.functions[0], program, hwd, load_mapping(hwd)) == g.source


def test_local_memory_sized_by_the_host(tmp_path: Path) -> None:
    """`local float[chunk]` with a parameter size: a __local kernel argument (the
    reduction with blocks of `chunk` threads instead of its constant BLOCK)."""
    from mcl.mcpl.loader import load_program
    from mcl.resources import kernels_dir

    source = (kernels_dir() / "reduction" / "gpu_v1.mcpl").read_text()
    chunked = tmp_path / "gpu_v1.mcpl"
    chunked.write_text(source.replace("const int BLOCK = 256;", "").replace("BLOCK", "chunk"))
    program = load_program(chunked, library=library())
    g = generate(program, "fermi")
    assert "__local float* restrict lSum" in g.source
    local_args = [a for a in g.functions[0].kernels[0].args if a.kind == "local"]
    assert [a.name for a in local_args] == ["lSum"]
    n, chunk = 100, 32
    x = np.random.default_rng(3).uniform(-1, 1, n).astype(np.float32)
    partial = np.zeros((n + chunk - 1) // chunk, np.float32)
    out = run(g, "reduction", {"n": n, "chunk": chunk, "partial": partial, "x": x})
    padded = np.zeros(len(partial) * chunk, np.float32)
    padded[:n] = x
    np.testing.assert_allclose(out["partial"], padded.reshape(-1, chunk).sum(axis=1), atol=1e-5)


BUILTINS = """
fermi void builtins(int n, global float[n] x, global int[n] k, global float[8, n] f,
                    global int[4, n] g, global float[1] total, global int[1] count) {
  foreach (int b in (n + 31) / 32 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        int i = b * 32 + t;
        if (i < n) {
          float c = 0.0;
          f[0, i] = sincos(x[i], c);
          f[1, i] = c;
          f[2, i] = toFloat(k[i]) / 3.0;
          f[3, i] = min(x[i], 0.5) + max(x[i], toFloat(k[i]));
          f[4, i] = abs(x[i] - 0.25);
          f[5, i] = pow(fabs(x[i]), 1.5) + x[i] ^ 2;
          f[6, i] = sqrt(fabs(x[i])) + exp(x[i]) - log(1.0 + fabs(x[i])) + floor(x[i]) + ceil(x[i]);
          f[7, i] = toFloat(toInt(x[i] * 10.0));
          g[0, i] = min(k[i], 3) + max(k[i], -2);
          g[1, i] = abs(k[i] - 5);
          g[2, i] = k[i] ^ 3;
          g[3, i] = k[i] % 4 + k[i] / 3;
          atomicAdd(total[0], x[i]);
          atomicAdd(count[0], 1);
        }
      }
    }
  }
}
"""


def test_builtins_and_atomics(tmp_path: Path) -> None:
    g = generate(load(tmp_path, BUILTINS), "fermi")
    assert "mcl_atomic_add_float_global(&total[0], x[i]);" in g.source  # CAS loop
    assert "atomic_add(&count[0], 1);" in g.source
    assert "sincos(x[i], &c)" in g.source and "mcl_ipow(k[i], 3)" in g.source
    n = 77
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, n).astype(np.float32)
    k = rng.integers(-7, 8, n).astype(np.int32)
    out = run(
        g,
        "builtins",
        {
            "n": n,
            "x": x,
            "k": k,
            "f": np.zeros((8, n), np.float32),
            "g": np.zeros((4, n), np.int32),
            "total": np.zeros(1, np.float32),
            "count": np.zeros(1, np.int32),
        },
    )
    xd, kd = x.astype(np.float64), k.astype(np.int64)
    expected_f = [
        np.sin(xd),
        np.cos(xd),
        kd / 3.0,
        np.minimum(xd, 0.5) + np.maximum(xd, kd),
        np.abs(xd - 0.25),
        np.abs(xd) ** 1.5 + xd**2,
        np.sqrt(np.abs(xd)) + np.exp(xd) - np.log(1 + np.abs(xd)) + np.floor(xd) + np.ceil(xd),
        np.trunc(x * np.float32(10.0)),
    ]
    np.testing.assert_allclose(out["f"], np.array(expected_f), rtol=1e-5, atol=1e-5)
    expected_g = [
        np.minimum(kd, 3) + np.maximum(kd, -2),
        np.abs(kd - 5),
        kd**3,
        np.fmod(kd, 4) + np.trunc(kd / 3).astype(np.int64),
    ]  # C's % and /
    np.testing.assert_array_equal(out["g"], np.array(expected_g))
    np.testing.assert_allclose(out["total"][0], xd.sum(), atol=1e-4)
    assert out["count"][0] == n


SHIFT = """
x86_avx512 void shift(int n, main float[n] a, main float[n] b) {
  foreach (int i in n threads) {
    foreach (int v in 1 vectors) {
      float mine = a[i];
      barrier(main);
      b[i] = mine * 2.0;
      barrier(main);
    }
  }
}
"""

GUARDED_MAPPING = """
device_type = "cpu"
[par_groups]
threads = { role = "global", dim = 1, group_size = 8 }
vectors = { role = "work-item", dim = 0 }
[spaces]
main = { address_space = "global", barrier = "global" }
reg = { address_space = "private" }
"""


@pytest.mark.parametrize("n", [21, 24])
def test_guards_keep_barriers_reachable(tmp_path: Path, n: int) -> None:
    """Work-groups of a fixed size: the global size is rounded up and the work guarded,
    but every work-item still meets every barrier."""
    g = generate(load(tmp_path, SHIFT), "x86_avx512", GUARDED_MAPPING)
    body = g.source[g.source.index("{\n    const int i") :]
    guard = "if ((int)get_global_id(1) < n) {"
    assert body.count(guard) == 2  # before and after the first barrier
    depth = 0
    for line in body.splitlines():  # no barrier stands inside a guard
        if "barrier(" in line:
            assert depth == 1, line
        depth += line.count("{") - line.count("}")
    assert "    float mine;" in body  # hoisted out of the guard, used after the barrier
    kernel = g.functions[0].kernels[0]
    a = np.arange(n, dtype=np.float32)
    out = run(g, "shift", {"n": n, "a": a, "b": np.full(n, -1, np.float32)})
    np.testing.assert_array_equal(out["b"], 2 * a)
    assert kernel.local[1].value == 8  # type: ignore[attr-defined]


LOOP_MAPPING = """
device_type = "cpu"
[par_groups]
threads = { role = "work-group", dim = 0 }
vectors = { role = "loop" }
[spaces]
main = { address_space = "global", barrier = "global" }
reg = { address_space = "private" }
"""


def test_vector_lanes_as_a_loop(tmp_path: Path) -> None:
    from mcl.mcpl.loader import load_program
    from mcl.resources import kernels_dir

    program = load_program(kernels_dir() / "matmul" / "perfect.mcpl", library=library())
    g = generate(program, "x86_avx512", LOOP_MAPPING)
    assert re.search(r"for \(int vj = 0; vj < nrVectorsM; vj\+\+\) \{", g.source)
    n, m, p = 5, 37, 7
    rng = np.random.default_rng(5)
    a, b = (
        rng.uniform(-1, 1, (n, p)).astype(np.float32),
        rng.uniform(-1, 1, (p, m)).astype(np.float32),
    )
    out = run(
        g, "matmul", {"n": n, "m": m, "p": p, "a": a, "b": b, "c": np.zeros((n, m), np.float32)}
    )
    np.testing.assert_allclose(out["c"], a @ b, rtol=1e-5, atol=1e-5)


TWOPHASE = """
x86_avx512 void twophase(int n, int iters, main float[n] a, main float[n] b) {
  int half = n / 2;
  foreach (int t in n threads) {
    foreach (int v in 1 vectors) {
      float[n] window;
      window[t] = a[t] + 1.0;
      b[t] = window[t];
    }
  }
  for (int it = 0; it < iters; it++) {
    foreach (int t in half threads) {
      foreach (int v in 1 vectors) {
        b[t] = b[t] * 2.0;
      }
    }
  }
}
"""


def test_host_statements_and_several_kernels(tmp_path: Path) -> None:
    g = generate(load(tmp_path, TWOPHASE), "x86_avx512")
    plan = g.functions[0]
    assert [k.name for k in plan.kernels] == ["twophase_0", "twophase_1"]
    assert [h.name for h in plan.host_vars] == ["half", "it"]
    # The private array sized by n: the kernel is built for the n it runs with.
    assert "float window[MCL_SIZE_window];" in g.source
    assert [m for m, _ in plan.kernels[0].defines] == ["MCL_SIZE_window"]
    session = OpenCLSession(g)
    for n, iters in ((11, 3), (40, 1)):
        a = np.arange(n, dtype=np.float32)
        out = session.run(
            "twophase", {"n": n, "iters": iters, "a": a, "b": np.zeros(n, np.float32)}
        ).outputs
        expected = a + 1
        expected[: n // 2] *= 2**iters
        np.testing.assert_array_equal(out["b"], expected)
    assert {"-DMCL_SIZE_window=11", "-DMCL_SIZE_window=40"} <= set(session.programs)


@pytest.mark.parametrize(
    ("source", "target", "code"),
    [
        (
            """
fermi void two(int n, global float[n] a) {
  foreach (int b in n blocks) {
    foreach (int w in 1 warps) { foreach (int t in 32 threads) { a[b] = 1.0; } }
    foreach (int w in 1 warps) { foreach (int t in 32 threads) { a[b] = 2.0; } }
  }
}
""",
            "fermi",
            "codegen-sibling-foreach",
        ),
        (
            """
perfect float first(int n, float x) {
  float[n] tmp;
  tmp[0] = x;
  return tmp[0];
}

x86_avx512 void priv(int n, main float[n] a) {
  foreach (int t in n threads) { foreach (int v in 1 vectors) {
    a[t] = first(n, a[t]);
  } }
}
""",
            "x86_avx512",
            "codegen-private-array-size",
        ),
    ],
)
def test_unsupported_code_is_a_clear_error(
    tmp_path: Path, source: str, target: str, code: str
) -> None:
    with pytest.raises(MclError) as exc:
        generate(load(tmp_path, source), target)
    d = exc.value.diagnostics[0]
    assert d.code == code
    assert d.span is not None and d.span.file.endswith("kernel.mcpl")


def test_barrier_on_a_space_without_one_names_the_mapping(tmp_path: Path) -> None:
    mapping = GUARDED_MAPPING.replace(', barrier = "global"', "")
    with pytest.raises(MclError) as exc:
        generate(load(tmp_path, SHIFT), "x86_avx512", mapping)
    d = exc.value.diagnostics[0]
    assert d.code == "codegen-barrier" and "x86_avx512.test.toml" in d.message
    assert d.span is not None and d.span.line == 6  # barrier(main);


def test_only_leaves_generate_code(tmp_path: Path) -> None:
    with pytest.raises(MclError) as exc:
        generate(load(tmp_path, TWOPHASE.replace("x86_avx512", "cpu")), "cpu")
    assert exc.value.diagnostics[0].code == "codegen-not-leaf"
