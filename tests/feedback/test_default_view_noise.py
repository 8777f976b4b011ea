"""What the default view shows on kernels the feedback had not seen (docs/feedback.md):
no suggestion without a gain the model states (several elements per unit), figures in
the user's names (a per-thread trip count over `tt`, never the analyses' `_t_tt`, and no
`-D` request for a loop variable), and the units of a grid bounded per dimension."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from conftest import by_code, feedback_source

from mcl.feedback.render.visibility import shown_by_default
from mcl.hdl.library import default_library
from mcl.mcpl.parse import parse_source
from mcl.translate.unit_limits import unit_limit

ONE_PER_THREAD = """\
gpu void scale(int n, dev float[n, 256] a) {
  foreach (int b in n blocks) {
    foreach (int t in 256 threads) {
      a[b, t] = a[b, t] * 2.0;
    }
  }
}
"""


def test_several_elements_per_unit_is_a_fact_the_default_view_leaves_out() -> None:
    """It states no gain and its recipe does not touch the bound a kernel is held by: on
    12 of 30 default-view suggestions of a review of unseen kernels it was noise."""
    messages = feedback_source(ONE_PER_THREAD, "gpu", {"n": 100_000})
    (advice,) = by_code(messages, "elements-several-per-unit")
    assert advice.severity.value == "info" and "estimated_gain" not in advice.value_map
    (shown,) = [s for m, s in zip(messages, shown_by_default(
        messages, None), strict=True) if m is advice]
    assert not shown


# A row sum: each thread walks the row 128 columns apart, from its own column.
ROWS = """\
hopper void rowsum(int h, int w, global float[h, w] a, global float[h] c,
                   global float[h] s) {
  foreach (int b in h blocks) {
    foreach (int wt in 4 warps) {
      foreach (int tt in 32 threads) {
        int t = wt * 32 + tt;
        float acc = 0.0;
        for (int k = t; k < w; k += 128) {
          acc += a[b, k] * c[b];
        }
        if (t == 0) {
          s[b] = acc;
        }
      }
    }
  }
}
"""
INTERNAL = re.compile(r"(?<![A-Za-z0-9_.])_[A-Za-z][A-Za-z0-9_]*")


def test_a_per_thread_trip_count_is_written_in_the_user_s_names() -> None:
    for values in ({}, {"h": 1000, "w": 1000}):
        messages = feedback_source(ROWS, "hopper", values)
        texts = [m.text for m in messages] + [
            v.text for m in messages for _, v in m.values]
        assert not [t for t in texts if INTERNAL.search(t)], values
        asked = {n for m in messages for _, v in m.values for n in v.needs}
        assert asked <= {"h", "w"} - set(values), asked
        (register,) = by_code(messages, "memory-register")
        assert "ceiling(-tt/128 + w/128 - wt/4) iterations of for-loop k" in register.text


# Two foreach statements over fermi's blocks: a 2-D grid, 65535 blocks per dimension.
GRID = """\
fermi void fill(int n, int m, global float[n, m] a) {
  foreach (int bi in n blocks) {
    foreach (int bj in m blocks) {
      foreach (int w in 1 warps) {
        foreach (int t in 32 threads) {
          if (t == 0) {
            a[bi, bj] = 1.0;
          }
        }
      }
    }
  }
}
"""


def test_a_grid_is_bounded_per_dimension() -> None:
    """300 x 300 blocks is 90,000 blocks, each dimension within fermi's 65535."""
    assert not by_code(feedback_source(GRID, "fermi", {"n": 300, "m": 300}),
                       "units-over-limit")
    (over,) = by_code(feedback_source(GRID, "fermi", {"n": 70_000, "m": 2}),
                      "units-over-limit")
    assert over.value_map["units"].numeric == 70_000 and "foreach bi runs" in over.text
    limit = unit_limit(default_library().get("fermi"), "blocks")
    assert limit is not None and limit.per_dimension
    assert limit.check(300, 300, None) == 90_000
    assert parse_source(GRID).functions  # the kernel is valid MCPL


WINDOW = """\
perfect void win(int n, int m, float[n + m] a, float[n] b) {
  foreach (int i in n threads) {
    float s = 0.0;
    for (int k = 0; k < m; k++) {
      s += a[i + k];
    }
    b[i] = s;
  }
}
"""


def test_no_reuse_message_or_proposal_at_a_reuse_ratio_of_1() -> None:
    """`a[i + k]` over `k < m`: m*n accesses of m + n - 1 elements. At m = 1 every
    element is loaded once, so nothing is to be tiled or shared; at m = 4 it is."""
    once = feedback_source(WINDOW, "gpu", {"n": 1000, "m": 1})
    assert not by_code(once, "reuse-ratio") and not by_code(once, "memory-faster-space")
    again = feedback_source(WINDOW, "gpu", {"n": 1000, "m": 4})
    (ratio,) = by_code(again, "reuse-ratio")
    assert ratio.value_map["ratio"].numeric > 3.9 and "tile these loops" in ratio.hint
    assert by_code(again, "memory-faster-space")


STENCIL = """\
perfect void stencil(int n, float[n + 2] a, float[n] b) {
  foreach (int i in n threads) {
    b[i] = a[i] + a[i + 1] + a[i + 2];
  }
}
"""


def test_stencil_neighbours_get_a_reuse_message() -> None:
    """Each access alone loads every element once; the three together load each element
    (but the two at either end) three times, as a brute-force count of the reads says."""
    messages = feedback_source(STENCIL, "perfect", {"n": 1000})
    (neighbours,) = by_code(messages, "reuse-neighbours")
    assert neighbours.value_map["accesses"].numeric == 3
    assert "a[i], a[i + 1] and a[i + 2]" in neighbours.text
    n = 1000
    reads = [0] * (n + 2)
    for i in range(n):
        for offset in range(3):
            reads[i + offset] += 1
    assert max(reads) == neighbours.value_map["accesses"].numeric
    program: Any = SimpleNamespace(main=parse_source(STENCIL))  # what Visibility reads
    shown = shown_by_default(messages, program)
    assert [s for m, s in zip(messages, shown, strict=True) if m is neighbours] == [True]


APART = """\
perfect void apart(int n, float[8 * n + 8] a, float[2] c, float[n] b) {
  foreach (int i in n threads) {
    b[i] = a[8 * i] + a[8 * i + 1] + c[0] + c[1];
  }
}
"""
FAR = """\
perfect void far(int n, float[n + 512] a, float[n] b) {
  foreach (int i in UNITS threads) {
    b[i] = a[i] + a[i + 128];
  }
}
"""


def test_reads_that_never_meet_are_no_neighbours() -> None:
    """`a[8 * i]` and `a[8 * i + 1]` never touch one element; `c[0]` and `c[1]` move with
    no loop; over 100 units, elements 128 apart do not meet, over 200 they do."""
    assert not by_code(feedback_source(APART, "perfect", {"n": 1000}), "reuse-neighbours")
    assert not by_code(feedback_source(FAR.replace("UNITS", "100"), "perfect", {"n": 1000}),
                       "reuse-neighbours")
    (meet,) = by_code(feedback_source(FAR.replace("UNITS", "200"), "perfect", {"n": 1000}),
                      "reuse-neighbours")
    assert "a[i] and a[i + 128]" in meet.text
