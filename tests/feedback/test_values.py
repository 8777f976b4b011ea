"""User values: `-D name=value`, `--values FILE`, missing values named, unknown names."""

from __future__ import annotations

import pytest
import sympy
from conftest import KERNELS, by_code, feedback, load_kernel

from mcl import pipeline
from mcl.defines import parse_define
from mcl.diagnostics import MclError
from mcl.feedback.registry import analyse_program
from mcl.feedback.values import collect_values, evaluate, load_values_file


def test_parse_define() -> None:
    assert parse_define("n=2048") == ("n", 2048)
    assert parse_define(" alpha = 1.5") == ("alpha", 1.5)
    assert parse_define("n=0x10") == ("n", 16)
    for bad in ("n", "=3", "n=abc", "2n=3", "n=inf"):
        with pytest.raises(MclError) as exc:
            parse_define(bad)
        assert exc.value.diagnostics[0].code == "values-bad-define"


def test_values_file_and_define_precedence(tmp_path) -> None:
    flat = tmp_path / "sizes.toml"
    flat.write_text("n = 2048\nm = 1024\n")
    table = tmp_path / "table.toml"
    table.write_text("[values]\np = 7\n")
    assert load_values_file(table) == {"p": 7}
    assert collect_values(["m=3"], [flat, table]) == {"n": 2048, "m": 3, "p": 7}


@pytest.mark.parametrize("text, code", [("n = ", "values-bad-file"),
                                        ("n = 'big'", "values-bad-file")])
def test_bad_values_files(tmp_path, text: str, code: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(MclError) as exc:
        load_values_file(path)
    assert exc.value.diagnostics[0].code == code
    with pytest.raises(MclError) as missing:
        load_values_file(tmp_path / "absent.toml")
    assert missing.value.diagnostics[0].code == "values-io"


def test_evaluate_names_the_missing_values() -> None:
    n, m = sympy.symbols("n m", integer=True, positive=True)
    v = evaluate(2 * n * m, {"n": 4})
    assert v.numeric is None and v.needs == ("m",)
    assert evaluate(2 * n * m, {"n": 4, "m": 5}).numeric == 40
    assert evaluate(n / 3, {"n": 4}).numeric == pytest.approx(4 / 3)


def test_messages_are_numeric_only_when_every_name_is_known() -> None:
    (partial,) = by_code(feedback(KERNELS / "matmul" / "perfect.mcpl", values={"n": 8}),
                         "opstats-summary")
    assert partial.value_map["computational"].numeric is None
    assert set(partial.needs) == {"m", "p"}
    assert "(=" not in partial.text.split(",")[0]  # no number shown for 2*m*n*p
    (full,) = by_code(feedback(KERNELS / "matmul" / "perfect.mcpl",
                               values={"n": 8, "m": 4, "p": 2}), "opstats-summary")
    assert full.value_map["computational"].numeric == 2 * 8 * 4 * 2
    assert "(= 128)" in full.text and not full.needs


def test_unknown_value_names_are_reported_with_a_suggestion() -> None:
    program, library = load_kernel(KERNELS / "matmul" / "perfect.mcpl")
    messages, levels = analyse_program(pipeline.check(program, library), library, {"nn": 4, "n": 4})
    (unknown,) = by_code(messages, "values-unknown-name")
    assert "'nn'" in unknown.text and unknown.hint and "'n'" in unknown.hint
    assert levels == {"matmul": "perfect"}
