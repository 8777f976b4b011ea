"""Linearised indexing of every MCPL array form, and C integer semantics on the host."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl.codegen.host_eval import evaluate, static_host_values
from mcl.codegen.layout import flat_dims, index_chain, linear_offset
from mcl.mcpl import types as T
from mcl.mcpl.ast import ArrayType, Index, Name, Prim
from mcl.mcpl.operators import c_div, c_mod
from mcl.mcpl.parse import parse_source
from mcl.mcpl.sidetables import SideTables
from mcl.mcpl.typed import Typed


def _typed() -> Typed:
    """Builds the offsets' nodes typed, as code generation does."""
    return Typed(SideTables())


def _value(offset) -> int:
    return int(evaluate(offset, {}))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=5).flatmap(
        lambda dims: st.tuples(st.just(dims), st.tuples(*(st.integers(0, d - 1) for d in dims)))
    )
)
def test_offset_is_row_major_over_all_dimensions(case) -> None:
    dims, index = case
    typed = _typed()
    offset = linear_offset([typed.int_lit(i) for i in index], [typed.int_lit(d) for d in dims],
                           typed)
    assert _value(offset) == np.ravel_multi_index(index, dims)


def test_tiles_are_tile_major() -> None:
    # int[2,2][3,3] d2: 2x2 tiles of 3x3 elements (paper 4.3); d2[ti, tj][ei, ej].
    typed = _typed()
    two, three = typed.int_lit(2), typed.int_lit(3)
    t = ArrayType(Prim("int"), ((two, two), (three, three)))
    access = Index(Index(Name("d2"), (typed.int_lit(1), typed.int_lit(0))),
                   (typed.int_lit(2), typed.int_lit(1)))
    base, indices = index_chain(access)
    assert base == Name("d2")
    offset = _value(linear_offset(indices, flat_dims(t), typed))
    storage = np.arange(36).reshape(2, 2, 3, 3)  # tile-major
    assert storage.reshape(-1)[offset] == storage[1, 0, 2, 1]
    assert offset == ((1 * 2 + 0) * 3 + 2) * 3 + 1


def test_partial_index_selects_a_sub_array() -> None:
    # img[i] of float[h][w] starts at i * w; d2[ti, tj] of int[2,2][3,3] at its tile.
    typed = _typed()
    ints = typed.int_lit
    assert _value(linear_offset([ints(3)], [ints(5), ints(7)], typed)) == 21
    dims = [ints(2), ints(2), ints(3), ints(3)]
    assert _value(linear_offset([ints(1), ints(1)], dims, typed)) == 27


def test_symbolic_offset_reads_like_the_source() -> None:
    from mcl.mcpl.printer import print_expr

    typed = _typed()
    i, j, k, n, m, p = (typed.name(x, T.INT) for x in "ijknmp")
    offset = linear_offset([i, j, k], [n, m, p], typed)
    assert print_expr(offset) == "(i * m + j) * p + k"
    # Every node it built is typed, by the checker's rule for `+` and `*` of ints.
    assert typed.tables.type_of(offset) == T.INT


@settings(max_examples=80, deadline=None)
@given(st.integers(-1000, 1000), st.integers(-50, 50).filter(lambda b: b != 0))
def test_host_division_truncates_like_c(a: int, b: int) -> None:
    q = int(a / b)  # exact for these magnitudes; truncates toward zero as C does
    assert c_div(a, b) == q
    assert c_mod(a, b) == a - q * b


def test_static_host_values_follow_fig9() -> None:
    m = parse_source(
        "perfect void f(int m) {\n"
        "  int nrThreadsM = 1024;\n"
        "  int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;\n"
        "  int w = nrThreadsM / 32;\n"
        "  int moved = 4;\n"
        "  moved = moved + 1;\n"
        "}\n",
        "f.mcpl",
        hwd_names={"perfect"},
    )
    known = static_host_values(m.functions[0].body.stmts, ())
    assert known == {"nrThreadsM": 1024, "w": 32}  # nrBlocksM needs m; moved is assigned
