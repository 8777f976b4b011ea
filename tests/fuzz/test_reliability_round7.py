"""Reliability, round 7: a read of a local array's element or a struct's field before
every statement that sets it (docs/reliability.md, "Round 7")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.checking import check_text

TYPES = "type Pair {{ float x; float y; }};\n"
LOCAL = (TYPES + "perfect void k(int n, main float[n] a) {{\n  foreach (int i in n threads) {{\n"
         "    float s = 0.0;\n    {decl}\n    {body}\n    a[i] = s;\n  }}\n}}\n")


@pytest.mark.parametrize(("decl", "body", "said"), [
    ("float[4] t;", "s = t[0]; t[0] = 1.0; s += t[0];",
     "6:9: error: 't[0]' is read before any statement sets element [0] of 't' (the first "
     "that does is at line 6): it has no value here"),
    ("float[4] t;", "t[0] = 1.0; s = t[1]; t[1] = 2.0;",
     "'t[1]' is read before any statement sets element [1] of 't'"),
    ("float[4] t;", "for (int q = 0; q < 4; q++) { s += t[q]; } "
                    "for (int q = 0; q < 4; q++) { t[q] = 1.0; }",
     "'t[q]' is read before any statement sets elements [0], [1], [2], [3] of 't'"),
    ("float[4] t;", "s = t[i % 4]; t[i % 4] = 1.0;",
     "'t[i % 4]' is read before any statement sets an element of 't'"),
    ("float[4] t;", "t[2] += 1.0;", "'t[2]' is read before any statement sets element [2]"),
    ("float[4] t;", "t[2]++;", "'t[2]' is read before any statement sets element [2]"),
    ("Pair p;", "s = p.x; p.x = 1.0; p.y = 2.0;",
     "'p.x' is read before any statement sets field 'x' of 'p'"),
])
def test_a_read_before_every_write_of_it_is_uninitialised(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], decl: str, body: str,
        said: str) -> None:
    # these passed: some statement of the function sets the element, only later
    out = check_text(tmp_path, LOCAL.format(decl=decl, body=body), capsys)
    assert said in out and "[mcpl-uninitialised]" in out, out
    assert out.count("[mcpl-uninitialised]") == 1


@pytest.mark.parametrize(("decl", "body"), [
    # an earlier iteration sets what a later one reads
    ("float[4] t;", "for (int q = 0; q < 4; q++) { if (q > 0) { s += t[q - 1]; } t[q] = 1.0; }"),
    ("float[4] t;", "for (int q = 0; q < 4; q++) { s += t[q]; t[q] = 1.0; }"),  # not sure
    # a write under a condition, or in a loop that may not run: not sure, so left alone
    ("float[4] t;", "if (i > 2) { t[0] = 1.0; } s = t[0];"),
    ("float[4] t;", "for (int q = 0; q < n; q++) { t[q] = 1.0; } s = t[3];"),
    ("float[4] t;", "if (i > 2) { t[0] = 1.0; } else { s = t[0]; }"),  # (not followed)
    # set before, in program order
    ("float[4] t;", "t[0] = 1.0; t[0] += 2.0; t[1] = t[0]; t[1]++; s = t[1];"),
    ("Pair p;", "p.x = 1.0; p.y = p.x; s = p.y;"),
    # set through a function (it may set it): left alone
    ("float[4] t;", "s = f(t[0]); t[0] = 1.0;"),
])
def test_reads_after_a_write_that_may_come_first_are_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], decl: str, body: str) -> None:
    helper = "perfect float f(float x) {\n  return 1.0;\n}\n"
    out = check_text(tmp_path, LOCAL.format(decl=decl, body=body) + helper, capsys)
    assert "mcpl-uninitialised" not in out, out


TILE = ("gpu void k(int n, float[n * 32] a) {{\n  foreach (int b in n blocks) {{\n"
        "    local float[32] s;\n    foreach (int t in 32 threads) {{\n      {body}\n"
        "    }}\n  }}\n}}\n")


def test_a_tile_read_before_the_barrier_that_follows_its_fill_is_uninitialised(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the fill comes after a barrier that every unit passes after its read
    body = ("float x = s[t];\n      barrier(local);\n      s[t] = a[b * 32 + t];\n"
            "      barrier(local);\n      a[b * 32 + t] = s[31 - t] + x;")
    out = check_text(tmp_path, TILE.format(body=body), capsys)
    assert "5:17: error: 's[t]' is read before any statement sets elements [0], [1], [2], " \
           "[3] and 28 more of 's' (the first that does is at line 7)" in out, out


@pytest.mark.parametrize("body", [
    # another unit may write its element before this unit reads it (a race, which the
    # barrier check reports, but no certain unset read)
    "float x = s[(t + 1) % 32];\n      s[t] = a[b * 32 + t];\n      barrier(local);\n"
    "      a[b * 32 + t] = s[31 - t] + x;",
    # filled, then read after the barrier
    "s[t] = a[b * 32 + t];\n      barrier(local);\n      a[b * 32 + t] = s[31 - t];",
    # a loop that fills every element before a barrier, read after it in the next pass
    "for (int r = 0; r < 4; r++) {\n        if (r > 0) { a[b * 32 + t] += s[(t + 1) % 32]; }"
    "\n        barrier(local);\n        s[t] = a[b * 32 + t] * 2.0;\n"
    "        barrier(local);\n      }",
])
def test_tiles_another_unit_or_iteration_may_fill_first_are_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> None:
    out = check_text(tmp_path, TILE.format(body=body), capsys)
    assert "mcpl-uninitialised" not in out, out


ROWS = ("perfect void k(int n, int m, main float[n * m + m] a) {{\n"
        "  foreach (int r in n threads) {{\n    for (int j = {start}; j {cond}; j++) {{\n"
        "      {body}\n    }}\n  }}\n}}\n")
OWN_ROW = [
    # a scan of each unit's row: j in 1 .. m - 1 keeps j - 1 in the row (m >= 2 there)
    (1, "< m", "a[r * m + j] = a[r * m + j] + a[r * m + j - 1];"),
    # a rotation of each unit's row
    (0, "< m - 1", "a[r * m + j] = a[r * m + j + 1];"),
]
OTHER_ROW = [
    (1, "< m", "a[r * m + j] = a[r * m + j] + a[r * m + j + m];"),  # the next row
    (1, "<= m", "a[r * m + j] = a[r * m + j] + a[r * m + j - 1];"),  # one past the row
    (0, "< m", "a[r * m + j] = a[r * m + j + 1];"),  # j + 1 = m: the next row's first
]


@pytest.mark.parametrize(("start", "cond", "body"), OWN_ROW)
def test_a_unit_updating_its_own_row_of_any_size_is_no_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], start: int, cond: str,
        body: str) -> None:
    # were read-write races: the row's length m is a size, not a number
    source = ROWS.format(start=start, cond=cond, body=body)
    assert "0 errors, 0 warnings" in check_text(tmp_path, source, capsys)


@pytest.mark.parametrize(("start", "cond", "body"), OTHER_ROW)
def test_a_unit_reading_past_its_row_is_a_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], start: int, cond: str,
        body: str) -> None:
    out = check_text(tmp_path, ROWS.format(start=start, cond=cond, body=body), capsys)
    assert "[mcpl-read-write-race]" in out, out


STRIDED = ("perfect void k(int n, main float[n * 4 + 1] a) {{\n  foreach (int i in n threads) {{\n"
           "    for (int k = 1; k < 4; k++) {{\n"
           "      a[i + k * n] = a[i + k * n] + a[i + (k - 1) * n{off}];\n    }}\n  }}\n}}\n")


PREFETCH = ("gpu void k(int n, int m, float[n * 32] a, float[m * 32] b, float[n * 32] c) {{\n"
            "  foreach (int g in n blocks) {{\n    local float[2][32] s;\n"
            "    foreach (int t in 32 threads) {{\n      float acc = 0.0;\n"
            "      s[0][t] = b[t];\n      barrier(local);\n"
            "      for (int k = 0; k < m; k++) {{\n"
            "        s[({next}) % 2][t] = b[(k + 1) % m * 32 + t];\n"
            "        for (int q = 0; q < 32; q++) {{\n"
            "          acc += s[k % 2][q] * a[g * 32 + q];\n        }}\n"
            "        barrier(local);\n      }}\n      c[g * 32 + t] = acc;\n    }}\n  }}\n}}\n")


BLOCK_ROWS = ("gpu void k(int n, int m, float[n * 32 * m + m] a) {{\n"
              "  foreach (int g in n blocks) {{\n    foreach (int t in 32 threads) {{\n"
              "      for (int j = 1; j < m; j++) {{\n        a[(g * 32 + t) * m + j] = "
              "a[(g * 32 + t) * m + j] + a[(g * 32 + t) * m + j{off}];\n"
              "      }}\n    }}\n  }}\n}}\n")
# Each kernel with the subscripts that prove every element one unit's own, and the same
# kernel one step further, where two units meet: (template, own, further, warning).
OWN_OR_FURTHER = [
    # i in 0 .. n - 1 and every other term a multiple of n: only i" = i; + 1: the next
    (STRIDED, {"off": ""}, {"off": " + 1"}, "mcpl-read-write-race"),
    # (k + 1) % 2 and k % 2 are never equal (was a missing-barrier warning); k + 2 is the
    # half being read
    (PREFETCH, {"next": "k + 1"}, {"next": "k + 2"}, "mcpl-missing-barrier"),
    # 32 m (g" - g) + m (t" - t) + R forces g first (|m (t" - t) + R| < 32 m), then t;
    # + m is the next thread's row
    (BLOCK_ROWS, {"off": " - 1"}, {"off": " + m"}, "mcpl-read-write-race"),
]


@pytest.mark.parametrize(("source", "own", "further", "code"), OWN_OR_FURTHER,
                         ids=["strided-column", "double-buffer", "rows-of-block-threads"])
def test_elements_the_subscripts_prove_a_units_own_are_no_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str,
        own: dict[str, str], further: dict[str, str], code: str) -> None:
    assert "0 errors, 0 warnings" in check_text(tmp_path, source.format(**own), capsys)
    out = check_text(tmp_path, source.format(**further), capsys)
    assert f"[{code}]" in out, out




NEGATIVE = ("const int K = 3 - 5;\nperfect void k(int n, main float[n] a, main float[n, n] c) {{\n"
            "  foreach (int i in n threads) {{\n    {body}\n  }}\n}}\n")


@pytest.mark.parametrize(("body", "said"), [
    ("a[K] = 1.0;", "4:7: error: index -2 is out of range: a is indexed from 0, whatever its "
                    "size [mcpl-index-range]"),
    ("a[i] = a[-1];", "4:14: error: index -1 is out of range: a is indexed from 0"),
    ("int k = -2; a[i] = a[k];", "index -2 is out of range: a is indexed from 0"),
    ("a[i - i - 1] = 1.0;", "index -1 is out of range: a is indexed from 0"),
    ("c[i, K] = 1.0;", "index -2 is out of range: c is indexed from 0"),
])
def test_a_negative_constant_index_is_out_of_range_whatever_the_size(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, said: str) -> None:
    # was a write-race or read-write-race warning at most: every unit reads or writes
    # before the array (a parameter's size is not known to the checker)
    out = check_text(tmp_path, NEGATIVE.format(body=body), capsys)
    assert said in out, out
    assert out.count("[mcpl-index-range]") == 1


@pytest.mark.parametrize("body", ["a[i] = a[K + 2];", "a[i] = a[n - 1];", "c[i, 0] = 1.0;"])
def test_constant_indices_from_0_are_left_to_the_sizes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> None:
    out = check_text(tmp_path, NEGATIVE.format(body=body), capsys)
    assert "mcpl-index-range" not in out, out


def test_the_fuzzer_generates_the_new_classes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # mcl.fuzz's generated kernels read a local element before the statement that sets it
    # and index below 0; the checker reports each such kernel
    import random

    from mcl.fuzz import generated_kernel

    rng = random.Random(7)
    kernels = [generated_kernel(rng) for _ in range(2000)]
    # kernels of this one statement: another class's error (a divisor that folds to 0,
    # an array of size 0) stops the check before the uninitialised reads are looked for
    early = [k for k in kernels if "]; r0[0] = 1.0;" in k and "float[4] r0;" in k
             and len(k.splitlines()) == 7][:4]
    negative = [k for k in kernels if "b[3 - 5]" in k and "^" not in k][:2]
    assert len(early) == 4 and len(negative) == 2
    for kernel in early:
        assert "[mcpl-uninitialised]" in check_text(tmp_path, kernel, capsys), kernel
    for kernel in negative:
        assert "index -2 is out of range" in check_text(tmp_path, kernel, capsys), kernel

