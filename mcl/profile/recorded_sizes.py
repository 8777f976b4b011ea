"""Counters recorded at other sizes than the run's: `mcl profile --counters FILE` holds
the feedback at the `-D` sizes (or the reference's) against a report recorded at
whatever sizes it was run with. The report keeps no sizes, but it keeps each launch's
grid (`launch__grid_size`, blocks), which the feedback predicts at the run's sizes
(the occupancy finding's `grid_blocks`): where the two differ, the report was recorded
at other sizes, and every figure compared would be off by the ratio of the sizes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mcl.diagnostics import Diagnostic, warning
from mcl.profile.counters import ProfiledLaunch
from mcl.profile.prediction import Prediction

GRID = "launch__grid_size"


def other_sizes(counters: str, launches: Sequence[ProfiledLaunch], prediction: Prediction,
                sizes: Mapping[str, int]) -> Diagnostic | None:
    """A warning where the recorded report `counters` launched another grid than the
    kernel launches at `sizes`. Only a report of one launch is judged: a function of
    several kernels launches several grids, and the prediction states one."""
    if len(launches) != 1 or prediction.grid_blocks is None:
        return None
    recorded = launches[0].get(GRID)
    if recorded is None or recorded == prediction.grid_blocks:
        return None
    at = " ".join(f"{k}={v}" for k, v in sizes.items()) or "the reference's sizes"
    return warning(
        "profile-counters-sizes",
        f"--counters {counters} was recorded at other sizes: its launch ran "
        f"{recorded:,.0f} blocks, the kernel launches {prediction.grid_blocks:,} at {at}; "
        "the figures compared are not of the same run",
        hint="give the sizes the report was recorded at with -D name=value, or record it "
        "again at these sizes (`mcl profile ... --save-counters FILE`)")
