"""Integer literals in generated code are C `int`s: never a literal C would read as a
`long`. The checker rejects out-of-range literals and shift counts, so code generation
only meets them through a bug of an earlier pass (an internal error, not a traceback), or
through a description constant that is too large (a clear error)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends import generate_module
from mcl.cli import main
from mcl.codegen.c_expr import int_literal
from mcl.codegen.layout import linear_offset, product
from mcl.diagnostics import MclError, Span
from mcl.mcpl import types as T
from mcl.mcpl.ast import Binary, IntLit, walk
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.mcpl.parse import parse_source
from mcl.mcpl.sidetables import SideTables
from mcl.mcpl.typed import Typed
from mcl.mcpl.types import INT_MAX, INT_MIN
from mcl.translate import translate_module

from .support import generate, library, load, run

REPRO = (
    "perfect void k(main int[1] r){ foreach (int i in 1 threads){ "
    "r[0] = 99999999999999999999; r[0] = 1 << 40; } }\n"
)


def test_mcl_codegen_stops_at_the_checker_with_positions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lit.mcpl"
    path.write_text(REPRO)
    out = tmp_path / "gen"
    assert main(["codegen", str(path), "--target", "x86_avx512", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "lit.mcpl:1:69" in err and "mcpl-int-range" in err
    assert "lit.mcpl:1:103" in err and "mcpl-shift-count" in err
    assert "Traceback" not in err
    assert not (out / "lit.cl").exists()


def test_an_out_of_range_literal_that_slipped_past_the_checker_is_an_internal_error():
    # generate_module does not refuse a program with errors itself (the pipeline does):
    # a pass that produced such a literal gets a clear internal error instead of a `.cl`
    # that C would read differently. The checker's tables type the literal all the same.
    module = translate_module(parse_source(REPRO, file="lit.mcpl"), "x86_avx512",
                              library()).module
    checked = pipeline.check(module, library())
    assert checked.errors  # the checker does reject it
    with pytest.raises(MclError) as exc:
        generate_module(checked, "x86_avx512", library())
    (d,) = exc.value.diagnostics
    assert d.code == "codegen-internal" and d.message.startswith("internal error:")
    assert "99999999999999999999" in d.message
    assert (d.span.line, d.span.column) == (1, 69)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (INT_MAX, "2147483647"), (-5, "(-5)"), (INT_MIN, "(-2147483647 - 1)")],
)
def test_literals_print_as_c_ints(value: int, text: str):
    assert int_literal(IntLit(value)) == text


@pytest.mark.parametrize("value", [INT_MAX + 1, INT_MIN - 1, 2**64])
def test_literals_outside_32_bits_are_never_printed(value: int):
    span = Span("k.mcpl", 3, 7, 3, 12)
    with pytest.raises(MclError) as exc:
        int_literal(IntLit(value, span=span))
    assert exc.value.diagnostics[0].code == "codegen-internal"
    assert exc.value.diagnostics[0].span == span


def test_folding_sizes_never_makes_a_literal_beyond_32_bits():
    typed = Typed(SideTables())
    big = [typed.int_lit(65536), typed.int_lit(65536)]
    assert product(big, typed) == Binary("*", IntLit(65536), IntLit(65536))
    assert product([typed.int_lit(1024), typed.int_lit(1024)], typed) == IntLit(1024 * 1024)
    offset = linear_offset([typed.int_lit(65535), typed.name("j", T.INT)], big, typed)
    assert all(INT_MIN <= n.value <= INT_MAX for n in _int_lits(offset))


def _int_lits(e: object) -> list[IntLit]:
    return [n for n in walk(e) if isinstance(n, IntLit)]


def test_a_description_constant_beyond_32_bits_is_a_clear_error(tmp_path: Path):
    # hopper's 80 GB of memory, in bytes.
    src = "hopper void k(global int[1] r) {\n  r[0] = hopper.mem.capacity / 1024;\n}\n"
    checked = load(tmp_path, src)
    with pytest.raises(MclError) as exc:
        generate_module(checked, "hopper", library())
    (d,) = exc.value.diagnostics
    assert d.code == "codegen-int-range"
    assert d.message == "hopper.mem.capacity = 85899345920 does not fit in a 32-bit int"
    assert (d.span.line, d.span.column) == (2, 10)


def test_the_smallest_int_survives_the_trip_to_the_device(tmp_path: Path):
    src = """
    x86_avx512 void k(main int[2] r) {
      foreach (int t in 1 threads) {
        foreach (int v in 1 vectors) {
          r[0] = -2147483648;
          r[1] = -2147483648 / 2;
        }
      }
    }
    """
    generated = generate(load(tmp_path, src), "x86_avx512")
    assert "(-2147483647 - 1)" in generated.source
    out = run(generated, "k", {"r": np.zeros(2, dtype=np.int32)})["r"]
    assert out.tolist() == [INT_MIN, INT_MIN // 2]


def test_the_repro_is_rejected_by_load_and_check(tmp_path: Path):
    path = tmp_path / "lit.mcpl"
    path.write_text(REPRO)
    program = load_program(path, library=library())
    codes = [d.code for d in check_program(program, library())]
    assert codes == ["mcpl-int-range", "mcpl-shift-count"]
