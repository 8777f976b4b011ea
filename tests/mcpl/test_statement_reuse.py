"""The editor's parse of an edited definition (mcl.mcpl.statement_reuse): only the
statement the edit lies in is parsed again, and the AST -- spans included -- and the
errors are those of the whole-file parse, over chains of random edits of shipped kernels
(each edit made to the text the one before left)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from check_support import parse_outcome as _outcome
from check_support import spy_on_statement_parse
from check_support import whole_parse as _whole

from mcl.mcpl import parse
from mcl.mcpl.parse import parse_source
from mcl.mcpl.statement_reuse import common_ends

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ["spmv/hopper_v17.mcpl", "matmul/hopper_v4.mcpl", "convolution/hopper_v2.mcpl"]
# What a person types inside a statement, and what breaks one apart.
TYPED = ["1", "0", " ", "\n", "x", "+ 1", "* 2", ";", "{", "}", "(", ")", "else ",
         "if (x) ", "// c\n", "/*", "[0]", "int q = 1;", "barrier(local);"]


@pytest.fixture
def reuse() -> Iterator[None]:
    parse.reuse_definitions()
    yield
    parse.reuse_definitions(False)


@pytest.fixture
def reused(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each edit that tried the statement's parse: did it give the model?"""
    return spy_on_statement_parse(monkeypatch)


def _edit(text: str, rng: random.Random) -> str:
    """One random edit: a string typed, a few characters deleted, or a number changed."""
    at = rng.randrange(len(text))
    kind = rng.random()
    if kind < 0.5:
        return text[:at] + rng.choice(TYPED) + text[at:]
    if kind < 0.8:
        return text[:at] + text[at + rng.randint(1, 3):]
    digit = next((k for k in range(at, len(text)) if text[k].isdigit()), None)
    if digit is None:
        return text
    return text[:digit] + str(rng.randint(0, 9)) + text[digit + 1:]


@pytest.mark.parametrize("kernel", KERNELS)
def test_random_edits_give_the_whole_file_parse(kernel: str, reuse: None,
                                                reused: list[bool]) -> None:
    path = ROOT / "kernels" / kernel
    base, file = path.read_text(encoding="utf-8"), str(path)
    rng = random.Random(kernel)
    good = base  # the last text that parsed: a typist mends what they broke
    assert _outcome(good, file) == _whole(good, file)
    for step in range(60):
        # mostly the text the last edit left, at times the kernel as shipped again
        text = _edit(base if step % 15 == 14 else good, rng)
        whole = _whole(text, file)
        assert _outcome(text, file) == whole, f"edit {step}"
        if not isinstance(whole, list):
            good = text
    assert sum(reused) >= 10, reused  # the statements' parse was taken often
    assert not all(reused)  # and refused where the edit broke a statement apart


def test_a_constant_changed_parses_one_statement(reuse: None, reused: list[bool]) -> None:
    path = ROOT / "kernels" / "spmv/hopper_v17.mcpl"
    text, file = path.read_text(encoding="utf-8"), str(path)
    parse_source(text, file)
    at = text.rindex("1;")  # a number in the kernel's last statement
    edited = text[:at] + "2" + text[at + 1:]
    assert _outcome(edited, file) == _whole(edited, file)
    assert _outcome(text, file) == _whole(text, file)  # and back
    assert reused == [True, True]


def test_common_ends() -> None:
    assert common_ends("abcdef", "abXdef") == (2, 3)
    assert common_ends("aaa", "aaaa") == (3, 0)  # the ends never overlap
    assert common_ends("abc", "abc") == (3, 0)
    assert common_ends("", "x") == (0, 0)
