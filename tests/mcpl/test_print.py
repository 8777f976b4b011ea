"""The pretty-printer: `parse(print(ast)) == ast` for the paper's listings, every shipped
kernel, the standard library, and generated trees; minimal parentheses; layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcl.mcpl import ast as A
from mcl.mcpl.parse import parse_file, parse_source
from mcl.mcpl.printer import ends_in_open_if, print_expr, print_module, print_stmt
from mcl.resources import kernels_dir, mcpl_stdlib_dir

LISTINGS = sorted(Path(__file__).with_name("listings").glob("*.mcpl"))
KERNELS = sorted(kernels_dir().glob("*/*.mcpl"))
STDLIB = sorted(mcpl_stdlib_dir().rglob("*.mcpl"))
HWDS = ("perfect", "gpu", "nvidia", "fermi")


def roundtrip(m: A.Module) -> A.Module:
    return parse_source(print_module(m), "printed.mcpl", hwd_names=HWDS)


@pytest.mark.parametrize(
    "path", LISTINGS + KERNELS + STDLIB, ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_round_trip_of_listings_kernels_and_stdlib(path: Path) -> None:
    m = parse_file(path, hwd_names=HWDS)
    printed = print_module(m)
    assert roundtrip(m) == m
    # Printing is a fixed point: the printed text prints to itself.
    assert print_module(parse_source(printed, hwd_names=HWDS)) == printed


def test_kernels_are_found() -> None:
    # The glob above grows as kernels land; it must not silently test nothing.
    assert any(p.parent.name == "matmul" for p in KERNELS)


def test_matmul_layout() -> None:
    m = parse_file(Path(__file__).with_name("listings") / "fig02_matmul_perfect.mcpl")
    assert print_module(m) == (
        "perfect void matmul(int n, int m, int p, main float[n, m] c, main float[n, p] a,\n"
        "                    main float[p, m] b) {\n"
        "    foreach (int i in n threads) {\n"
        "        foreach (int j in m threads) {\n"
        "            float sum = 0.0;\n"
        "            for (int k = 0; k < p; k++) {\n"
        "                sum += a[i, k] * b[k, j];\n"
        "            }\n"
        "            c[i, j] = sum;\n"
        "        }\n"
        "    }\n"
        "}\n"
    )


def test_module_layout() -> None:
    src = (
        "package lib.math;\nmodule complex;\n\nexport Complex, mul;\n\nimport perfect;\n"
        "import lib.math.common;\n\nconst float PI = 3.14;\n\n"
        "type Complex {\n    float real;\n    float imag;\n}\n\n"
        "type Tile(int n) {\n    main float[n] data;\n}\n\n"
        "perfect void mul(Complex a) {\n    a.real = PI;\n}\n"
    )
    assert print_module(parse_source(src)) == src


def e(src: str) -> A.Expr:
    return parse_source(f"perfect void f() {{ x = {src}; }}").functions[0].body.stmts[0].value


@pytest.mark.parametrize(
    "src",
    [
        "a + b * c",
        "(a + b) * c",
        "a - (b - c)",
        "a - b - c",
        "a / (b * c)",
        "-(a ^ 2)",
        "(-a) ^ 2",
        "a ^ b ^ c",
        "(a ^ b) ^ c",
        "a ^ -b",
        "-(a + b)",
        "!(a && b)",
        "a < b == c < d",
        "(a == b) == c",
        "a || b && c",
        "(a || b) && c",
        "(a + b)[i]",
        "f(x).y",
        "a[i, j][k].r",
        "-(-a)",
        "-(-1)",
        "(-1) ^ 2",
        "a - -1",
        "x ^ -2.5",
        "gpu.hierarchy.blocks.block.threads.max_nr_units",
        "min(a, b + 1) % 3",
        "a << 1 + b",
        "(a << 1) + b",
    ],
)
def test_minimal_parentheses(src: str) -> None:
    # Each example is written with exactly the parentheses it needs.
    assert print_expr(e(src)) == src


def test_a_signed_base_of_a_power_is_printed_in_parentheses() -> None:
    # `-a ^ 2` is `(-a) ^ 2` (as in the original MCL); printed, it says so.
    assert print_expr(e("-a ^ 2")) == "(-a) ^ 2"
    assert print_expr(e("a ^ -b ^ c")) == "a ^ (-b) ^ c"
    assert e(print_expr(e("a ^ -b ^ c"))) == e("a ^ -b ^ c")


def test_constructed_trees_get_the_parentheses_they_need() -> None:
    a, b, c = A.Name("a"), A.Name("b"), A.Name("c")
    assert print_expr(A.Binary("<", A.Binary("<", a, b), c)) == "(a < b) < c"
    assert print_expr(A.Binary("-", a, A.Binary("+", b, c))) == "a - (b + c)"
    assert print_expr(A.Binary("^", A.Binary("^", a, b), c)) == "(a ^ b) ^ c"
    assert print_expr(A.Binary("*", A.IntLit(-1), a)) == "-1 * a"
    assert print_expr(A.Binary("^", A.IntLit(-1), a)) == "(-1) ^ a"
    assert print_expr(A.Unary("-", A.IntLit(-1))) == "-(-1)"
    assert print_expr(A.Index(A.Unary("-", a), (b,))) == "(-a)[b]"
    assert print_expr(A.FloatLit(2.0)) == "2.0"
    assert print_expr(A.FloatLit(1e20)) == "1e+20"


def test_statements_layout() -> None:
    s = (
        parse_source("perfect void f() { if (a) x = 1; else if (b) { x = 2; } else x = 3; }")
        .functions[0]
        .body.stmts[0]
    )
    assert print_stmt(s, indent=1) == (
        "    if (a)\n        x = 1;\n    else if (b) {\n        x = 2;\n    } else\n        x = 3;"
    )
    loop = (
        parse_source(
            "perfect void f() { for (k = 0; k < n; k += 2) foreach (int i in n threads) a <=> b; }"
        )
        .functions[0]
        .body.stmts[0]
    )
    assert print_stmt(loop) == (
        "for (k = 0; k < n; k += 2)\n    foreach (int i in n threads)\n        a <=> b;"
    )


def test_dangling_else_in_a_constructed_tree_keeps_its_meaning() -> None:
    inner = A.If(A.Name("b"), A.Assign(A.Name("x"), "=", A.IntLit(1)))
    outer = A.If(A.Name("a"), inner, A.Assign(A.Name("x"), "=", A.IntLit(2)))
    text = print_stmt(outer)
    reparsed = parse_source(f"perfect void f() {{\n{text}\n}}").functions[0].body.stmts[0]
    # The else still belongs to the outer if; braces were needed to say so.
    assert reparsed.orelse == outer.orelse
    assert reparsed.then == A.Block((inner,))


# --------------------------------------------------------------------- generated trees

NAMES = st.sampled_from(["a", "b", "c", "i", "j", "sum", "x2", "l_a", "nrThreads"])
SPACES = st.sampled_from(["main", "reg", "local", "shared", "dev"])
GROUPS = st.sampled_from(["threads", "blocks", "warps"])
BIN_OPS = st.sampled_from(sorted(A.BINARY_PRECEDENCE))


def _unary(args: tuple[str, A.Expr]) -> A.Expr:
    op, operand = args
    if op == "-" and isinstance(operand, (A.IntLit, A.FloatLit)) and operand.value >= 0:
        # `-1` is the literal -1 (the builder folds the sign), not a unary minus.
        return A.IntLit(-operand.value) if isinstance(operand, A.IntLit) else operand
    return A.Unary(op, operand)


leaves = st.one_of(
    NAMES.map(A.Name),
    st.integers(-50, 10**12).map(A.IntLit),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda v: A.FloatLit(v)),
    st.booleans().map(A.BoolLit),
    st.lists(NAMES, min_size=1, max_size=3).map(lambda p: A.HwdConst(("gpu", *p))),
)


def _extend(children: st.SearchStrategy[A.Expr]) -> st.SearchStrategy[A.Expr]:
    return st.one_of(
        st.tuples(BIN_OPS, children, children).map(lambda t: A.Binary(*t)),
        st.tuples(st.sampled_from(["-", "!"]), children).map(_unary),
        st.tuples(children, st.lists(children, min_size=1, max_size=3)).map(
            lambda t: A.Index(t[0], tuple(t[1]))
        ),
        st.tuples(children, NAMES).map(lambda t: A.Field(*t)),
        st.tuples(NAMES, st.lists(children, max_size=3)).map(lambda t: A.Call(t[0], tuple(t[1]))),
    )


exprs = st.recursive(leaves, _extend, max_leaves=12)
lvalues = st.recursive(
    NAMES.map(A.Name),
    lambda inner: st.one_of(
        st.tuples(inner, st.lists(exprs, min_size=1, max_size=2)).map(
            lambda t: A.Index(t[0], tuple(t[1]))
        ),
        st.tuples(inner, NAMES).map(lambda t: A.Field(*t)),
    ),
    max_leaves=3,
)
prims = st.sampled_from(["int", "float", "double", "byte", "bool"]).map(A.Prim)
dims = st.lists(st.lists(exprs, min_size=1, max_size=2).map(tuple), min_size=1, max_size=2)
array_types = st.tuples(prims, dims).map(lambda t: A.ArrayType(t[0], tuple(t[1])))
types = st.one_of(
    prims,
    array_types,
    st.sampled_from(["Complex", "Tile"]).map(A.NamedType),
    st.tuples(st.just("Tile"), st.lists(exprs, min_size=1, max_size=2)).map(
        lambda t: A.NamedType(t[0], tuple(t[1]))
    ),
)
views = st.tuples(array_types, NAMES).map(lambda t: A.View(*t))
decls = st.builds(
    A.Decl,
    type=types,
    name=NAMES,
    spaces=st.lists(SPACES, max_size=2).map(tuple),
    const=st.booleans(),
    init=st.none() | exprs,
    view=st.none() | views,
)
assigns = st.builds(
    A.Assign,
    target=lvalues,
    op=st.sampled_from(["=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>="]),
    value=exprs,
)
incdecs = st.builds(A.IncDec, target=lvalues, op=st.sampled_from(["++", "--"]))
simple_stmts = st.one_of(
    decls,
    assigns,
    incdecs,
    st.builds(A.ViewDecl, source=NAMES, view=views),
    st.builds(A.CallStmt, call=st.builds(A.Call, func=NAMES, args=st.lists(exprs).map(tuple))),
    st.builds(A.Swap, left=lvalues, right=lvalues),
    st.builds(A.Barrier, space=SPACES),
    st.builds(A.Return, value=st.none() | exprs),
)


def _if(cond: A.Expr, then: A.Stmt, orelse: A.Stmt | None) -> A.If:
    if orelse is not None and not isinstance(then, A.Block) and ends_in_open_if(then):
        then = A.Block((then,))  # what the source must say to attach the else outside
    return A.If(cond, then, orelse)


stmts = st.recursive(
    simple_stmts,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda s: A.Block(tuple(s))),
        st.builds(_if, exprs, inner, st.none() | inner),
        st.builds(
            A.For,
            init=st.one_of(
                st.builds(A.Decl, type=st.just(A.Prim("int")), name=NAMES, init=exprs),
                st.builds(A.Assign, target=NAMES.map(A.Name), op=st.just("="), value=exprs),
            ),
            cond=exprs,
            step=st.one_of(incdecs, assigns),
            body=inner,
        ),
        st.builds(A.Foreach, var=NAMES, count=exprs, group=GROUPS, body=inner),
    ),
    max_leaves=6,
)
params = st.builds(
    A.Param,
    type=types,
    name=NAMES,
    spaces=st.lists(SPACES, max_size=2).map(tuple),
    const=st.booleans(),
)
functions = st.builds(
    A.Function,
    hwd=st.sampled_from(HWDS),
    ret=st.one_of(prims, st.just(A.Prim("void"))),
    name=NAMES,
    params=st.lists(params, max_size=4).map(tuple),
    body=st.lists(stmts, max_size=4).map(lambda s: A.Block(tuple(s))),
)
modules = st.builds(
    A.Module,
    package=st.none() | st.lists(NAMES, min_size=1, max_size=3).map(tuple),
    name=st.none() | NAMES,
    exports=st.none() | st.lists(NAMES, max_size=3).map(tuple),
    # A single-name import is a description import, and its name then starts description
    # constants (`perfect.x`), so single names come from the description names only.
    imports=st.lists(
        st.one_of(
            st.lists(NAMES, min_size=2, max_size=3).map(lambda p: A.Import(tuple(p))),
            st.sampled_from(HWDS).map(lambda h: A.Import((h,))),
        ),
        max_size=2,
    ).map(tuple),
    constants=st.lists(
        st.builds(A.Decl, type=prims, name=NAMES, const=st.just(True), init=exprs), max_size=2
    ).map(tuple),
    types=st.lists(
        st.builds(
            A.TypeDef,
            name=st.sampled_from(["Complex", "Tile"]),
            params=st.lists(params, max_size=2).map(tuple),
            fields=st.lists(decls, max_size=3).map(tuple),
        ),
        max_size=2,
    ).map(tuple),
    functions=st.lists(functions, max_size=2).map(tuple),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exprs)
def test_generated_expressions_round_trip(expr: A.Expr) -> None:
    text = print_expr(expr)
    m = parse_source(f"perfect void f() {{ x = {text}; }}", hwd_names=("gpu",))
    assert m.functions[0].body.stmts[0].value == expr, text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules)
def test_generated_modules_round_trip(m: A.Module) -> None:
    text = print_module(m)
    assert parse_source(text, hwd_names=("gpu", *HWDS)) == m, text
