"""Stride and cache-line formulas (paper 6.4) against brute-force counts of the lines an
access stream touches."""

from __future__ import annotations

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl.feedback.facts import strides


def lines_touched(addresses: list[int], element: int, line: int) -> int:
    """Brute force: the distinct cache lines a stream of element accesses touches."""
    return len({ln for a in addresses for ln in range(a // line, (a + element - 1) // line + 1)})


def stream(start: int, stride: int, count: int) -> list[int]:
    return [start + t * stride for t in range(count)]


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(1, 120),
    element=st.sampled_from([1, 2, 4, 8]),
    multiple=st.integers(-40, 40),
    line=st.sampled_from([32, 64, 128]),
)
def test_best_case_is_the_fewest_lines_over_all_alignments(count, element, multiple, line):
    stride = multiple * element
    best, note = strides.best_case_lines(count, stride, element, line)
    assert note is None
    # Arrays hold whole elements: an access starts at a multiple of the element size.
    starts = range(abs(stride) * count, abs(stride) * count + line, element)
    counts = [lines_touched(stream(s, stride, count), element, line) for s in starts]
    assert int(best) == min(counts)
    assert all(int(best) <= c <= count for c in counts)  # worst case: a line per iteration


def test_paper_formula_for_unit_stride():
    # Section 6.4: iterations * stride / line_size lines (a[i, k] in loop k on xeon_phi:
    # 4 B stride, 64 B lines -> p/16 lines).
    p = sympy.Symbol("p", integer=True, positive=True)
    best, _ = strides.best_case_lines(p, 4, 4, 64)
    for value in (1, 15, 16, 17, 2048):
        assert int(best.subs(p, value)) == lines_touched(stream(0, 4, value), 4, 64)
    assert best.subs(p, 2048) == 128


def test_stride_zero_is_one_line_and_wide_strides_one_line_per_iteration():
    assert strides.best_case_lines(1000, 0, 4, 64) == (1, None)
    assert strides.best_case_lines(1000, 64, 4, 64)[0] == 1000
    assert strides.best_case_lines(1000, -256, 4, 64)[0] == 1000


def test_symbolic_stride_is_decided_with_values_or_assumed_wide():
    m = sympy.Symbol("m", integer=True, positive=True)
    p = sympy.Symbol("p", integer=True, positive=True)
    best, note = strides.best_case_lines(p, 4 * m, 4, 64)
    assert best == p and note is not None and "4*m" in note
    small, note = strides.best_case_lines(p, 4 * m, 4, 64, {"m": 2, "p": 10})
    assert note is None
    assert int(small.subs({p: 10, m: 2})) == lines_touched(stream(0, 8, 10), 4, 64)


@settings(max_examples=100, deadline=None)
@given(
    units=st.integers(1, 100),
    group=st.sampled_from([4, 8, 16, 32]),
    multiple=st.integers(0, 40),
    element=st.sampled_from([4, 8]),
    line=st.sampled_from([64, 128]),
    offset=st.integers(0, 31),
)
def test_groups_share_lines(units, group, multiple, element, line, offset):
    stride = multiple * element
    best, worst, _ = strides.grouped_lines(units, group, stride, element, line)

    def fetched(start: int) -> int:  # brute force: each group fetches its own lines
        return sum(lines_touched([start + u * stride for u in range(g, min(units, g + group))],
                                 element, line) for g in range(0, units, group))

    for start in (0, offset * element):
        assert int(best) <= fetched(start) <= int(worst)
    # Equal to the best case when every group starts on a line.
    if stride == 0 or stride >= line or (group * stride) % line == 0:
        assert int(best) == fetched(0)
    # And the worst case happens: a group that starts in the last element of a line.
    first = min(units, group)
    assert lines_touched([line - element + u * stride for u in range(first)], element,
                         line) == int(strides.grouped_lines(first, group, stride, element,
                                                            line)[1])


def test_groups_of_units_sharing_a_cache():
    n = sympy.Symbol("n", integer=True, positive=True)
    best, worst, _ = strides.grouped_lines(n, 8, 0, 4, 128)  # 8 blocks per L1, stride 0
    assert best == sympy.ceiling(n / 8) and best.subs(n, 2048) == 256
    best, _, _ = strides.grouped_lines(n, 8, 8192, 4, 128)  # a row apart: a line each
    assert best == n
    best, _, _ = strides.grouped_lines(n, None, 0, 4, 128)  # all units share one cache
    assert best == 1


def test_loop_stride_subtracts_start_from_start_plus_step():
    k, j, m = sympy.symbols("k j m", integer=True)
    assert strides.loop_stride(k * m + j, k, 0, 1) == m
    assert strides.loop_stride(k * m + j, j, 3, 2) == 2
    assert strides.loop_stride(k * m + j, sympy.Symbol("x"), 0, 1) == 0
