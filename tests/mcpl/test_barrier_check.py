"""The static barrier check (issue 20, mcl/mcpl/barriers.py): a write to a shared array and
another unit's access of it with no barrier between them is a warning with both source
locations; the shipped kernels, which are correct, get none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcl.cli import main

REPO = Path(__file__).resolve().parents[2]
FERMI_V1 = REPO / "kernels/matmul/fermi_v1.mcpl"


def _warnings(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    main(["check", "--no-feedback", "--format", "json", *extra, str(path)])
    diags = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    return [d for d in diags if d["code"] == "mcpl-missing-barrier"]


def _without_barrier(tmp_path: Path, which: int) -> tuple[Path, list[int]]:
    """fermi_v1 with its `which`-th barrier(shared) (0 or 1) removed, and the lines of the
    store-phase writes and the load-phase read of l_a."""
    lines = FERMI_V1.read_text(encoding="utf-8").splitlines()
    barriers = [i for i, line in enumerate(lines) if "barrier(shared);" in line]
    assert len(barriers) == 2
    del lines[barriers[which]]
    path = tmp_path / "fermi_v1.mcpl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    writes = [i + 1 for i, line in enumerate(lines) if "l_a[ei][tj] =" in line]
    read = [i + 1 for i, line in enumerate(lines) if "l_a[ei][k2]" in line]
    return path, writes + read


def test_fermi_v1_without_its_second_barrier(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The next phase's store overwrites l_a while other threads may still read the last
    phase's (Oclgrind reports over 1,000 races there)."""
    path, (write1, write2, read) = _without_barrier(tmp_path, 1)
    found = _warnings(path, capsys)
    assert sorted(d["line"] for d in found) == [write1, write2]
    assert all(f"at line {read}," in d["message"] and "l_a[ei][k2]" in d["message"]
               for d in found)


def test_fermi_v1_without_its_first_barrier(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, (write1, write2, read) = _without_barrier(tmp_path, 0)
    found = _warnings(path, capsys)
    assert {d["line"] for d in found} == {read}
    assert {f"at line {write1}," in d["message"] or f"at line {write2}," in d["message"]
            for d in found} == {True}


def test_own_elements_need_no_barrier(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "own.mcpl"
    path.write_text("""gpu void k(int n, dev float[n] y, dev float[n] x) {
  foreach (int b in (n + 31) / 32 blocks) {
    local float[32] l;
    local float[2, 32] two;
    foreach (int t in 32 threads) {
      int i = b * 32 + t;
      for (int r = 0; r < 4; r++) {
        l[t] = x[i % n] + r;
        y[i % n] = l[t] * 2.0 + two[0, t];
        two[1, (t + 1) % 32] = l[t];
        barrier(local);
      }
    }
  }
}
""", encoding="utf-8")
    assert _warnings(path, capsys) == []


SHIPPED = sorted(REPO.glob("kernels/*/*.mcpl"))


@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.stem}" for p in SHIPPED])
def test_no_warning_on_the_shipped_kernels(path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert _warnings(path, capsys) == []


@pytest.mark.parametrize("level", ["fermi", "hopper"])
def test_no_warning_on_translated_barriers(level: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert _warnings(REPO / "kernels/reduction/gpu_v1.mcpl", capsys, "--level", level) == []


BARRIER_KERNELS = REPO / "tests/mcpl/barrier_kernels"


@pytest.mark.parametrize("name", ["guarded_tree", "double_buffered_scan"])
def test_guarded_reductions_and_double_buffers_are_not_races(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Which units touch which elements in each phase between barriers: a guard `t < s`
    keeps the writes (0 .. s-1) apart from the reads (s .. 2s-1); `buf[1 - cur, t]` and
    `buf[cur, ...]` are different halves (cur is the same in every unit)."""
    assert _warnings(BARRIER_KERNELS / f"{name}.mcpl", capsys) == []


def test_tree_reduction_without_its_barrier_is_one_finding(
        capsys: pytest.CaptureFixture[str]) -> None:
    found = _warnings(BARRIER_KERNELS / "tree_without_barrier.mcpl", capsys)
    assert len(found) == 1  # the pair once, not once per order
    assert "'tmp[t + s]' reads" in found[0]["message"] and "('tmp[t]'" in found[0]["message"]


def test_a_reduction_loop_reusing_a_divergent_loops_name_is_not_a_race(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`for (int i = 128; ...)` after a grid-stride `for (int i = b * 256 + t; ...)`: the
    second `i` is a new variable, the same in every unit, so its guard `t < i` keeps the
    step's writes and reads apart (the original MCL distribution's findPeak pattern)."""
    assert _warnings(BARRIER_KERNELS / "reused_name_tree.mcpl", capsys) == []


@pytest.mark.parametrize(("name", "read_lines"), [
    # the loop's barrier removed: each step reads what the previous step wrote
    ("reused_name_tree_without_barrier", {"best[t + i]": 23, "at[t + i]": 26}),
    # the barrier before the loop removed: the first step reads the other units' stores
    ("reused_name_tree_without_first_barrier", {"best[t + i]": 22, "at[t + i]": 25}),
])
def test_planted_races_with_a_reused_loop_name_are_found(
        name: str, read_lines: dict[str, int], capsys: pytest.CaptureFixture[str]) -> None:
    found = _warnings(BARRIER_KERNELS / f"{name}.mcpl", capsys)
    reads = {d["message"].split("'")[1]: d["line"] for d in found if "' reads" in d["message"]}
    assert reads == read_lines and len(found) == len(read_lines)


def _translated_warnings(path: Path, level: str) -> list[str]:
    """The missing-barrier findings of the translated program alone (`mcl check --level`
    shows those the source's check has not already made)."""
    from mcl.hdl.library import default_library
    from mcl.pipeline import checked_at

    checked = checked_at(path, (), default_library(), level)
    return [d.message for d in checked.diagnostics if d.code == "mcpl-missing-barrier"]


@pytest.mark.parametrize("level", ["fermi", "hopper"])
@pytest.mark.parametrize(("name", "races"), [
    ("guarded_tree", 0), ("reused_name_tree", 0),
    ("tree_without_barrier", 1), ("reused_name_tree_without_barrier", 2)])
def test_the_translated_reduction_reads_like_the_source(
        level: str, name: str, races: int) -> None:
    """Translated to a level with warps, the thread index is a flattened one (`int t = wt *
    nrThreadsBlock + tt;`), at least 0 like the index it replaces, so the guard `t < s`
    keeps the step's writes and reads apart there too, and a removed barrier still shows."""
    assert len(_translated_warnings(BARRIER_KERNELS / f"{name}.mcpl", level)) == races
