"""The kernel library's numpy references (kernels/README.md): they honour the contract,
build arguments that fit the declared parameters exactly, and compute the same values as
a naive Python loop written straight from the definition of each computation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mcl.mcpl import ast
from mcl.mcpl.parse import parse_file
from mcl.resources import kernels_dir
from mcl.verify import Reference, load_reference

APPS = sorted(p.parent.name for p in kernels_dir().glob("*/reference.py"))
KERNEL_FILES = sorted(kernels_dir().glob("*/*.mcpl"))
EXPECTED_APPS = {
    "matmul",
    "convolution",
    "histogram",
    "gesummv",
    "blackscholes",
    "spmv",
    "vectoradd",
    "reduction",
    "transpose",
}
DTYPES = {"float": np.float32, "int": np.int32, "double": np.float64}


def _ref(app: str) -> Reference:
    return load_reference(kernels_dir() / app / "reference.py")


def _size(e: ast.Expr, env: dict[str, int]) -> int:
    """Evaluate a size expression (C integer arithmetic) independently of the interpreter."""
    if isinstance(e, ast.IntLit):
        return e.value
    if isinstance(e, ast.Name):
        return env[e.name]
    assert isinstance(e, ast.Binary), e
    a, b = _size(e.left, env), _size(e.right, env)
    if e.op == "/":
        return int(a / b)
    return {"+": a + b, "-": a - b, "*": a * b}[e.op]


def test_every_application_of_the_brief_is_shipped() -> None:
    assert EXPECTED_APPS <= set(APPS)


@pytest.mark.parametrize("app", APPS)
def test_contract(app: str) -> None:
    ref = _ref(app)
    # A rule for how far a correct float32 output may lie from the float64 reference.
    assert any(hasattr(ref.module, rule) for rule in ("error_bound", "error_terms"))
    assert ref.outputs and all(isinstance(o, str) for o in ref.outputs)
    sizes = ref.sizes
    assert sizes and all(isinstance(v, int) and v > 0 for v in sizes.values())
    # Defaults must exercise counts that do not divide typical split sizes.
    assert any(v % 16 for v in sizes.values())
    work = ref.work(sizes)
    assert work is not None and work[0] > 0


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_inputs_fit_the_declared_parameters(path: Path) -> None:
    """Every version in a folder shares the reference, so its inputs must fit each one: a
    version's parameters are the reference's inputs, less any of its SCRATCH arrays (which
    the runners pass only to a version that declares them)."""
    app = path.parent.name
    ref = _ref(app)
    module = parse_file(path)
    function = module.function(ref.function)
    assert function is not None, f"{path} defines no {ref.function}"
    args = ref.module.inputs(ref.sizes, np.random.default_rng(3))
    scratch = set(getattr(ref.module, "SCRATCH", ()))
    assert scratch <= set(args) and not scratch & set(ref.outputs)
    assert set(args) - scratch == {p.name for p in function.params} - scratch
    assert {p.name for p in function.params} <= set(args)
    env = {k: v for k, v in args.items() if isinstance(v, int)}
    # the file's constants, for sizes written with them (a scratch array's PARTIALS)
    for c in module.constants:
        if c.init is not None and all(isinstance(n, (ast.IntLit, ast.Name, ast.Binary))
                                      for n in ast.walk(c.init)):
            env[c.name] = _size(c.init, env)
    for p in function.params:
        value = args[p.name]
        if isinstance(p.type, ast.Prim):
            if p.type.name == "int":
                assert type(value) is int, p.name
            else:
                assert isinstance(value, DTYPES[p.type.name]), p.name
            continue
        assert isinstance(p.type, ast.ArrayType)
        shape = tuple(_size(e, env) for group in p.type.dims for e in group)
        assert value.shape == shape, p.name
        assert value.dtype == DTYPES[p.type.element.name], p.name
        if p.name in ref.outputs:
            assert not value.any(), f"output {p.name} must start zero-filled"


@pytest.mark.parametrize("app", APPS)
def test_reference_shapes_and_dtypes(app: str) -> None:
    ref = _ref(app)
    args = ref.module.inputs(ref.sizes, np.random.default_rng(4))
    expected = ref.module.reference(args)
    for name in ref.outputs:
        assert expected[name].shape == args[name].shape
        assert expected[name].dtype == args[name].dtype


@pytest.mark.parametrize("app", APPS)
def test_reference_leaves_its_arguments_alone(app: str) -> None:
    ref = _ref(app)
    args = ref.module.inputs(ref.sizes, np.random.default_rng(5))
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    ref.module.reference(args)
    for k, v in before.items():  # NaN where NaN was (spmv's scratch arrays start so)
        assert np.array_equal(args[k], v, equal_nan=isinstance(v, np.ndarray)
                              and v.dtype.kind == "f"), k


# ----------------------------------------------------------------- naive loop versions


def _matmul(a: dict) -> dict:
    n, m, p = a["n"], a["m"], a["p"]
    return {
        "c": [
            [sum(float(a["a"][i, k]) * float(a["b"][k, j]) for k in range(p)) for j in range(m)]
            for i in range(n)
        ]
    }


def _convolution(a: dict) -> dict:
    h, w, fh, fw = a["h"], a["w"], a["fh"], a["fw"]
    out = [[0.0] * w for _ in range(h)]
    for i in range(h):
        for j in range(w):
            s = 0.0
            for y in range(fh):
                for x in range(fw):
                    s += float(a["f"][y, x]) * float(a["a"][i + y, j + x])
            out[i][j] = s / (fh * fw)
    return {"b": out}


def _histogram(a: dict) -> dict:
    hist = [0] * 256
    for v in a["image"].ravel().tolist():
        hist[v] += 1
    return {"hist": hist}


def _gesummv(a: dict) -> dict:
    n = a["n"]
    y = []
    for i in range(n):
        t = sum(float(a["a"][i, j]) * float(a["x"][j]) for j in range(n))
        u = sum(float(a["b"][i, j]) * float(a["x"][j]) for j in range(n))
        y.append(float(a["alpha"]) * t + float(a["beta"]) * u)
    return {"y": y}


def _blackscholes(a: dict) -> dict:
    def cdf(d: float) -> float:
        return 0.5 * math.erfc(-d / math.sqrt(2))

    r, v = float(a["r"]), float(a["v"])
    call, put = [], []
    for s, x, t in zip(a["s"].tolist(), a["x"].tolist(), a["t"].tolist(), strict=True):
        d1 = (math.log(s / x) + (r + v * v / 2) * t) / (v * math.sqrt(t))
        d2 = d1 - v * math.sqrt(t)
        call.append(s * cdf(d1) - x * math.exp(-r * t) * cdf(d2))
        # put-call parity: C - P = S - X e^{-rt}
        put.append(call[-1] - s + x * math.exp(-r * t))
    return {"call": call, "put": put}


def _spmv(a: dict) -> dict:
    rp = a["rowptr"].tolist()
    y = []
    for i in range(a["nrows"]):
        y.append(
            sum(float(a["vals"][k]) * float(a["x"][a["cols"][k]]) for k in range(rp[i], rp[i + 1]))
        )
    return {"y": y}


def _vectoradd(a: dict) -> dict:
    return {"c": [float(x) + float(y) for x, y in zip(a["a"], a["b"], strict=True)]}


def _reduction(a: dict) -> dict:
    x, chunk = a["x"].tolist(), a["chunk"]
    return {"partial": [sum(x[c : c + chunk]) for c in range(0, len(x), chunk)]}


def _transpose(a: dict) -> dict:
    n, m = a["n"], a["m"]
    return {"b": [[float(a["a"][i, j]) for i in range(n)] for j in range(m)]}


NAIVE = {
    "matmul": (_matmul, {"n": 3, "m": 5, "p": 7}),
    "convolution": (_convolution, {"h": 4, "w": 3, "fh": 3, "fw": 2}),
    "histogram": (_histogram, {"h": 5, "w": 7}),
    "gesummv": (_gesummv, {"n": 5}),
    "blackscholes": (_blackscholes, {"n": 9}),
    "spmv": (_spmv, {"nrows": 6, "ncols": 5, "nnz": 11}),
    "vectoradd": (_vectoradd, {"n": 7}),
    "reduction": (_reduction, {"n": 23, "chunk": 5}),
    "transpose": (_transpose, {"n": 3, "m": 4}),
}


def test_every_reference_has_a_naive_version() -> None:
    assert set(APPS) <= set(NAIVE)


@pytest.mark.parametrize("app", sorted(NAIVE))
@pytest.mark.parametrize("seed", [0, 1])
def test_reference_agrees_with_naive_loops(app: str, seed: int) -> None:
    ref = _ref(app)
    naive, sizes = NAIVE[app]
    args = ref.module.inputs(sizes, np.random.default_rng(seed))
    expected = ref.module.reference(args)
    loops = naive(args)
    for name in ref.outputs:
        np.testing.assert_allclose(
            expected[name].astype(np.float64),
            np.asarray(loops[name], dtype=np.float64),
            rtol=1e-5,
            atol=1e-5,
            err_msg=f"{app}.{name}",
        )


def test_spmv_rejects_impossible_sizes() -> None:
    with pytest.raises(ValueError, match="nnz"):
        _ref("spmv").module.inputs({"nrows": 2, "ncols": 2, "nnz": 5}, np.random.default_rng(0))


def test_references_load_by_path_outside_the_package(tmp_path: Path) -> None:
    """References are loaded from files, so a copy elsewhere works the same."""
    copy = tmp_path / "reference.py"
    copy.write_text((kernels_dir() / "vectoradd" / "reference.py").read_text())
    assert load_reference(copy).function == "vectoradd"
