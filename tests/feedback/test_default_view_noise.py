"""What the default view shows on kernels the feedback had not seen (docs/feedback.md):
no suggestion without a gain the model states (several elements per unit), figures in
the user's names (a per-thread trip count over `tt`, never the analyses' `_t_tt`, and no
`-D` request for a loop variable), and the units of a grid bounded per dimension."""

from __future__ import annotations

import re

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
