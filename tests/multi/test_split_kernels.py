"""Splitting shipped leaf kernels into ranges of blocks (mcl.multi.split), run one range
after another on the default OpenCL device and assembled on the host: the result matches
the numpy reference, each range holds only the rows its blocks touch, and a kernel
without a safe split is refused with the array and the access."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcl.backends import generate_module
from mcl.backends.opencl.runner import OpenCLSession, select_device
from mcl.diagnostics import MclError
from mcl.mcpl.loader import load_program
from mcl.multi.split import ranges, split_program
from mcl.verify import verify

from .support import CASES, case, library


@pytest.mark.parametrize("name", sorted(CASES))
def test_uneven_ranges_assemble_to_the_reference(name: str) -> None:
    program, reference, sizes, inputs, expected, _ = case(name)
    split = split_program(program, reference.function, "hopper", library(), inputs)
    session = OpenCLSession(generate_module(split.program, "hopper", library()),
                            select_device(None))
    pieces = [split.piece(first, count)
              for first, count in ranges(split.blocks, [1.0, 2.5, 1.0]) if count]
    assert len(pieces) == 3
    split.check_disjoint(pieces)
    outputs = [session.run(reference.function, split.args(inputs, p)).outputs for p in pieces]
    checks = verify(reference, expected, split.assemble(inputs, pieces, outputs), sizes)
    assert checks and all(c.ok for c in checks), [(c.name, c.max_abs) for c in checks]


def test_matmul_ranges_hold_their_rows_of_a_and_all_of_b() -> None:
    program, reference, sizes, inputs, _, _ = case("matmul")
    split = split_program(program, reference.function, "hopper", library(), inputs)
    last = split.piece(split.blocks - 1, 1)
    tile = 128  # hopper_v1's TILE_I
    first_row = (split.blocks - 1) * tile
    assert (last.rows["a"].lo, last.rows["a"].hi) == (first_row, sizes["n"] - 1)
    assert (last.rows["b"].lo, last.rows["b"].hi) == (0, sizes["p"] - 1)
    assert split.args(inputs, last)["a"].shape == (sizes["n"] - first_row, sizes["p"])


def test_convolution_ranges_hold_the_filters_halo() -> None:
    program, reference, sizes, inputs, _, _ = case("convolution")
    split = split_program(program, reference.function, "hopper", library(), inputs)
    piece = split.piece(1, 1)
    written = piece.writes["b"]
    assert written is not None
    # rows of a: the rows of b written, and fh - 1 more below them
    assert piece.rows["a"].lo <= written.lo
    assert piece.rows["a"].hi >= written.hi + sizes["fh"] - 1
    assert piece.rows["a"].hi - piece.rows["a"].lo + 1 < sizes["h"] + sizes["fh"] - 1


def test_histogram_ranges_add_into_zeros() -> None:
    program, reference, _, inputs, _, _ = case("histogram")
    split = split_program(program, reference.function, "hopper", library(), inputs)
    assert split.added == {"hist"}
    args = split.args(inputs, split.piece(0, 2))
    assert not np.any(args["hist"])


UNSPLITTABLE = """
const int T = 64;
hopper void transpose(int n, int m, global float[m, n] out, global float[n, m] src) {
  foreach (int bi in (n + T - 1) / T blocks) {
    foreach (int t in T threads) {
      int i = bi * T + t;
      if (i < n) {
        for (int j = 0; j < m; j++) {
          out[j, i] = src[i, j];
        }
      }
    }
  }
}
"""


def test_overlapping_writes_are_refused_naming_the_access(tmp_path: Path) -> None:
    path = tmp_path / "transpose.mcpl"
    path.write_text(UNSPLITTABLE)
    program = load_program(path, library=library())
    values = {"n": 200, "m": 9}
    split = split_program(program, "transpose", "hopper", library(), values)
    with pytest.raises(MclError) as caught:
        split.check_disjoint([split.piece(0, 2), split.piece(2, 2)])
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "multi-no-split"
    assert "'out[j, i]' of array 'out'" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 9


def test_two_kernels_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "two.mcpl"
    path.write_text("""
hopper void twice(int n, global float[n] a) {
  foreach (int b in n blocks) { foreach (int t in 1 threads) { a[b] = a[b] + 1.0; } }
  foreach (int b in n blocks) { foreach (int t in 1 threads) { a[b] = a[b] * 2.0; } }
}
""")
    program = load_program(path, library=library())
    with pytest.raises(MclError, match="launches 2 kernels"):
        split_program(program, "twice", "hopper", library(), {"n": 8})


def test_the_split_is_a_checked_program() -> None:
    """The ranged kernel's new parameters are declared, every name of them bound to its
    declaration, and every expression of the split program typed (code generation has
    no typer of its own to fall back on)."""
    import typing

    from mcl.identity import Ref
    from mcl.mcpl import ast
    from mcl.mcpl import types as T
    from mcl.multi.split import FIRST

    program, reference, _, inputs, _, _ = case("matmul")
    split = split_program(program, reference.function, "hopper", library(), inputs)
    checked = split.program
    assert checked is not None and not checked.errors
    ranged = checked.main.function(reference.function)
    assert ranged is split.ranged
    exprs = [e for e in ast.walk(ranged) if isinstance(e, typing.get_args(ast.Expr))]
    assert exprs and all(Ref(e) in checked.tables.types for e in exprs)
    first = next(p for p in ranged.params if p.name == FIRST)
    declared = checked.tables.binding_declared_by(first)
    assert declared is not None and declared.type == T.INT
    uses = list(checked.tables.uses_of(declared))
    assert uses and all(isinstance(u, ast.Name) and u.name == FIRST for u in uses)
