"""The original MCL's language as a program written for it uses it (docs/mcpl.md):
each feature with the original's meaning, run through the interpreter where a value
shows it. The kernels are small ones written for these tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcl.diagnostics import Severity
from mcl.hdl.library import default_library, load_library
from mcl.interp import run_function
from mcl.mcpl import ast as A
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.mcpl.parse import parse_source


def load(tmp_path: Path, source: str):
    path = tmp_path / "k.mcl"
    path.write_text(source, encoding="utf-8")
    program = load_program(path, library=default_library())
    diagnostics = check_program(program, default_library())
    return program, diagnostics


def errors(diagnostics) -> list[str]:
    return [str(d) for d in diagnostics if d.severity == Severity.ERROR]


def value(src: str) -> A.Expr:
    return parse_source(f"perfect void f() {{ x = {src}; }}").functions[0].body.stmts[0].value


def test_octal_literals_and_unary_plus():
    assert value("0o17") == A.IntLit(15)
    assert value("+5") == A.IntLit(5)
    assert value("a + +b") == A.Binary("+", A.Name("a"), A.Name("b"))
    assert value("-(+3)") == A.IntLit(-3)


UNARY_POWER = """
perfect void f(int n, float[n] out, float[n] x) {
  foreach (int i in n threads) {
    out[i] = -x[i] ^ 2 + (-x[i]) ^ 3 - -x[i] ^ 3;
  }
}
"""


def test_unary_minus_binds_tighter_than_power_and_is_warned_where_it_matters(tmp_path):
    program, diagnostics = load(tmp_path, UNARY_POWER)
    assert errors(diagnostics) == []
    warned = [d for d in diagnostics if d.code == "mcpl-unary-power"]
    # Only `-x[i] ^ 2`: `(-x[i]) ^ 3` is written out, and an odd power reads the same.
    assert len(warned) == 1 and warned[0].span.column == 14
    assert "(-x[i]) ^ 2, not -(x[i] ^ 2)" in warned[0].message
    x = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    out = np.zeros(3, dtype=np.float32)
    result = run_function(program, "f", {"n": 3, "out": out, "x": x})
    # (-x)^2 + (-x)^3 - (-x)^3; the other reading, -(x^2) + (-x)^3 + x^3, is -x^2.
    expected = x.astype(np.float64) ** 2
    assert np.allclose(result["out"], expected)


HEX_HDL = """
hardware_description hexdev;
specializes perfect;

parallelism hierarchy {
  perfect.hierarchy.main;
  perfect.hierarchy.threads;
}

device hexdev {
  mem;
  ic;
  cores;
}

memory mem {
  space(main);
  capacity = 0x400 MB;
}

interconnect ic {
  connects(mem, cores.core[*]);
  latency = 0x10 cycles;
}

execution_group cores {
  nr_units = 0x8;
  execution_unit core {
    slots(thread, 2);
    perfect.ops;
    load_store_unit lsu {
      slots(thread, 1);
      perfect.memory_ops;
    }
  }
}
"""


def test_hexadecimal_integers_in_hdl(tmp_path):
    (tmp_path / "hexdev.hdl").write_text(HEX_HDL, encoding="utf-8")
    library = load_library([str(tmp_path)])
    assert "hexdev" not in library.failed
    hwd = library.get("hexdev")
    assert hwd.value("cores.nr_units").value == 8
    assert hwd.value("ic.latency").value == 16


@pytest.mark.parametrize("source", ["0x", "0o8"])
def test_malformed_literals_are_syntax_errors(source):
    from mcl.diagnostics import MclError

    with pytest.raises(MclError):
        value(source)
