"""The time model's instruction issue and its loads in flight from the compiler's machine
code (mcl.feedback.facts.issue_counts, mcl.backends.cuda.line_instructions;
docs/feedback.md, "Time estimate"): every warp instruction of the SASS the schedulers
issue, each line's as often as the feedback counts it to run, once per copy the compiler
made of it; and the loads a warp has in flight as the compiler scheduled them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import by_program
from mcl.backends.cuda import line_instructions as sass
from mcl.backends.cuda import registers as compiled
from mcl.feedback import compiler_instructions
from mcl.feedback.analyses.timemodel import (
    ACHIEVED_BANDWIDTH,
    DEVICE_MEMORY,
    SM,
    Figures,
    Phase,
    flying,
)
from mcl.feedback.compiler_instructions import LineCode, Lines
from mcl.feedback.messages import Message
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

ROOT = Path(__file__).resolve().parents[2]

# A listing as `nvdisasm --print-line-info` writes it: a loop (the branch back to
# .L_x_0) holding line 7's three loads, used only after the last; a predicated branch on
# line 6; the padding and the closing branch to itself after the exit; the slow path of
# a division, a function the kernel calls.
LISTING = """
        .section        .text.k,"ax",@progbits
        .type           k,@function
k:
        //## File "/tmp/k.cu", line 12
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        //## File "/tmp/k.mcpl", line 6
        /*0010*/                   ISETP.GE.AND P0, PT, R0, 0x4, PT ;
        /*0020*/               @P0 BRA `(.L_x_1) ;
.L_x_0:
        //## File "/tmp/k.mcpl", line 7
        /*0030*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0040*/                   LDG.E.128 R8, desc[UR4][R2.64+0x10] ;
        /*0050*/                   LDG.E R5, desc[UR4][R2.64+0x20] ;
        /*0060*/                   FADD R6, R4, R6 ;
        /*0070*/                   STS [R3], R6 ;
        //## File "/tmp/k.mcpl", line 5
        /*0080*/               @P1 BRA `(.L_x_0) ;
.L_x_1:
        /*0090*/                   EXIT ;
.L_x_2:
        /*00a0*/                   BRA `(.L_x_2);
        /*00b0*/                   NOP;
        .type           $__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath,@function
$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath:
        /*00c0*/                   SHF.R.U32.HI R12, RZ, 0x17, R3 ;
        /*00d0*/                   RET.REL.NODEC R14 `(k) ;
"""


def test_the_listing_gives_each_line_its_code_by_loop_depth() -> None:
    code = sass.per_line(LISTING, ())
    assert code[("k", 0, 0)] == LineCode(1, 0, 0, 0)  # the entry, of no MCPL line
    assert code[("k", 6, 0)].instructions == 2 and code[("k", 6, 0)].branches == 1
    line = code[("k", 7, 1)]  # in the loop closed by the branch back to .L_x_0
    assert (line.instructions, line.memory_bytes, line.global_loads) == (5, 4 + 16 + 4 + 4, 3)
    # all three issued before the first use; the other two used together at the branch
    assert line.in_flight == pytest.approx((3 + 2 + 2) / 3)
    assert code[("k", 5, 1)].branches == 1
    # the exit after the loop (its line still 5); the padding, the branch to itself and
    # the slow path are not counted
    assert code[("k", 5, 0)] == LineCode(1, 0, 0, 0)
    assert sum(c.instructions for c in code.values()) == 10


def test_a_load_used_at_once_is_one_in_flight() -> None:
    listing = LISTING.replace("LDG.E R4, desc[UR4][R2.64] ;",
                              "LDG.E R4, desc[UR4][R2.64] ;\n        /*0038*/   FADD R7, R4, R7 ;")
    code = sass.per_line(listing, ())
    # R4 used alone, with no other load issued; the other two together
    assert code[("k", 7, 1)].in_flight == pytest.approx((1 + 2 + 2) / 3)


def test_loads_used_in_turn_are_in_flight_on_average() -> None:
    """Four loads issued before the first use and used one after another (a loop
    unrolled by 4): 4, 3, 2 and 1 in flight at their uses, 2.5 on average, the loads a
    warp keeps in flight over the wait (Little's law's figure), not the most."""
    loads = "\n".join(f"        /*{0x30 + 8 * i:04x}*/   LDG.E R{4 + i}, desc[UR4][R2.64] ;"
                      for i in range(4))
    uses = "\n".join(f"        /*{0x50 + 8 * i:04x}*/   FADD R9, R{4 + i}, R9 ;"
                     for i in range(4))
    alone = LISTING.replace("LDG.E.128 R8, desc[UR4][R2.64+0x10]", "MOV R8, R8").replace(
        "LDG.E R5, desc[UR4][R2.64+0x20]", "MOV R5, R5")  # line 7's other two loads
    listing = alone.replace(
        "        /*0030*/                   LDG.E R4, desc[UR4][R2.64] ;", loads + "\n" + uses)
    line = sass.per_line(listing, ())[("k", 7, 1)]
    assert (line.flying, line.uses) == (4 + 3 + 2 + 1, 4)
    assert line.in_flight == pytest.approx(2.5)


def test_the_cache_s_form_keeps_every_figure() -> None:
    code = sass.per_line(LISTING, ())
    lines = sass._lines(sass._flat(code), {"k"})
    assert lines[7] == (code[("k", 7, 1)],)
    assert lines[5] == (code[("k", 5, 0)], code[("k", 5, 1)])
    assert sass._lines(sass._flat(code), {"other"}) == {}


@pytest.fixture
def counter() -> Iterator[list[Lines]]:
    """The instruction counter of the test: the code it is handed, for every kernel."""
    given: list[Lines] = []
    compiler_instructions.use_counter(lambda facts: given[0] if given else None)
    yield given
    compiler_instructions.use_counter(None)


def _message(tmp_path: Path, source: str, sizes: dict) -> Message:
    path = tmp_path / "k.mcpl"
    path.write_text(source)
    library = default_library()
    program = load_program(path, (), library)
    function = program.main.functions[0]
    messages: list[Message] = analyse(function, pipeline.check(program, library),
                                      library.get(function.hwd), sizes)
    (found,) = [m for m in messages if m.code == "time-estimate"]
    return found


def _estimate(tmp_path: Path, source: str, sizes: dict) -> dict:
    return {k: v.numeric for k, v in _message(tmp_path, source, sizes).values}


def _text(tmp_path: Path, source: str, sizes: dict) -> str:
    return _message(tmp_path, source, sizes).text


GUARDED = """
hopper void k(int n, global float[n] a, global float[n] b) {
  foreach (int bi in n / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int i = bi * 256 + w * 32 + t;
        if (t < 4) {
          b[i] = 2.0 * a[i];
        }
      }
    }
  }
}
"""
N = 132 * 256 * 64
WARPS = N / 32


def _issue_seconds(instructions: float) -> float:
    """hopper: 132 SMs, 4 schedulers each, one instruction a cycle at 1.98 GHz."""
    return instructions / (132 * 4 * 1.98e9)


def test_every_instruction_of_the_machine_code_is_issued(tmp_path: Path, counter) -> None:
    """A line with no statement (the kernel's entry: line 0; a foreach line: the split
    of the block index) runs once per warp, as does the `if` every lane reaches."""
    assert "seconds_instruction_issue" not in _estimate(tmp_path, GUARDED, {"n": N})
    counter.append({0: (LineCode(3, 0, 0),), 3: (LineCode(40, 0, 0),),
                    7: (LineCode(2, 0, 0, branches=1),), 8: (LineCode(6, 8, 1),)})
    figures = _estimate(tmp_path, GUARDED, {"n": N})
    # the `if`'s body under a branch: its 4 lanes of 32 in every warp, a lower bound
    expected = (3 + 40 + 2 + 6 * 4 / 32) * WARPS
    assert figures["seconds_instruction_issue"] == pytest.approx(_issue_seconds(expected))
    assert "the issue of the compiler's instructions" in _text(tmp_path, GUARDED, {"n": N})


def test_a_predicated_body_is_issued_by_every_warp_that_reaches_it(tmp_path: Path,
                                                                    counter) -> None:
    """No branch on the `if`'s line: the compiler predicated its body, so every warp
    issues it with the failing lanes turned off (Nsight Compute counts them so)."""
    counter.append({7: (LineCode(2, 0, 0),), 8: (LineCode(6, 8, 1),)})
    figures = _estimate(tmp_path, GUARDED, {"n": N})
    assert figures["seconds_instruction_issue"] == pytest.approx(
        _issue_seconds((2 + 6) * WARPS))


LOOPED = """
hopper void k(int n, global float[n] a, global float[n] b) {
  foreach (int bi in n / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int i = bi * 256 + w * 32 + t;
        float s = 0.0;
        for (int r = 0; r < 8; r++) {
          s = s * 0.5 + a[i];
        }
        b[i] = s;
      }
    }
  }
}
"""


@pytest.mark.parametrize("depth, copies", [(0, 8), (1, 4)])
def test_a_loop_s_code_is_counted_once_per_copy(tmp_path: Path, counter, depth: int,
                                                copies: int) -> None:
    """Line 9 runs 8 times per unit. Unrolled fully (no loop in the machine code), its
    8 copies run once; unrolled by 4 (a loop), each copy twice: its loads, 4 of the 4
    bytes the statement moves, say how many copies there are."""
    counter.append({9: (LineCode(3 * copies, 4 * copies, copies, depth),)})
    figures = _estimate(tmp_path, LOOPED, {"n": N})
    assert figures["seconds_instruction_issue"] == pytest.approx(_issue_seconds(3 * 8 * WARPS))


def test_the_issue_limits_the_sm_where_it_is_longer() -> None:
    """The schedulers issue one instruction each per cycle: where the machine code holds
    more than the arithmetic and the on-chip accesses take, the SM takes that long."""
    phase = Phase(device_seconds=0.0, on_chip_bytes=1e6, flops=1e6, loads_per_sm=0.0)
    f = Figures(multiprocessors=2, clock_hz=1e9, warps_per_sm=64, peak_flops=1e12,
                on_chip_bandwidth=1e12, loads_in_flight=1, latency_s=1e-7,
                phases=(phase,), schedulers=4)
    assert f.issue(phase) == pytest.approx(2e-6)
    busy = Phase(device_seconds=0.0, on_chip_bytes=1e6, flops=1e6, loads_per_sm=0.0,
                 instructions=8e3 * 2 * 4)  # 8,000 cycles on each scheduler
    assert f.issue(busy) == pytest.approx(8e-6)


def _two_phases(blocks: float, second: Phase) -> Figures:
    """A phase that waits 10 us for device memory, then `second`, at `blocks` an SM."""
    waits = Phase(device_seconds=10e-6 * ACHIEVED_BANDWIDTH, on_chip_bytes=0.0, flops=0.0,
                  loads_per_sm=0.0)
    return Figures(multiprocessors=2, clock_hz=1e9, warps_per_sm=64, peak_flops=1e12,
                   on_chip_bandwidth=1e12, loads_in_flight=1, latency_s=1e-7,
                   phases=(waits, second), schedulers=4, blocks_per_sm=blocks)


def test_the_blocks_of_an_sm_issue_across_their_phases() -> None:
    """One block's barrier holds only its own warps: where others are resident, a
    phase that only issues runs while other blocks wait in theirs, and the SM's issue
    of all the phases is the floor; alone, a block's phases follow each other."""
    issuing = Phase(device_seconds=0.0, on_chip_bytes=0.0, flops=0.0, loads_per_sm=0.0,
                    instructions=8e3 * 2 * 4)  # 8 us on each scheduler
    assert _two_phases(1, issuing).seconds == pytest.approx(18e-6)
    assert _two_phases(8, issuing).overlapped
    assert _two_phases(8, issuing).seconds == pytest.approx(10e-6)
    more = replace(issuing, instructions=8e3 * 2 * 4 * 2)  # 16 us: the issue limits
    assert _two_phases(8, more).seconds == pytest.approx(16e-6)
    assert _two_phases(8, more).limit == SM and _two_phases(8, issuing).limit == DEVICE_MEMORY


def test_on_chip_memory_stays_in_its_phase() -> None:
    """A phase bound by its on-chip accesses (a scan's tree level, a tile's multiply)
    reads what the phase before stored: it still follows the others' waits."""
    banked = Phase(device_seconds=0.0, on_chip_bytes=8e6, flops=0.0, loads_per_sm=0.0,
                   instructions=8e3)
    assert _two_phases(8, banked).seconds == pytest.approx(18e-6, rel=1e-3)


def test_the_schedule_gives_the_loads_in_flight() -> None:
    """Little's law's average over every load: each load's executions over its line's
    count in flight where the compiler's schedule is known, else its body's copies; the
    executions over the sum of those."""
    runs = [((9, 3), 1024.0, 1), ((12, 3), 64.0, 1)]
    assert flying(runs) == 1
    assert flying(runs, ((9, 4), (12, 16))) == pytest.approx(1088 / (1024 / 4 + 64 / 16))
    # nothing scheduled for line 9: one in flight there
    assert flying(runs, ((12, 16),)) == pytest.approx(1088 / (1024 + 64 / 16))


def test_loads_outside_the_most_frequent_body_keep_their_own_count_in_flight() -> None:
    """convolution hopper_v1: 81 filter loads unrolled (81 copies, once per thread) fly
    3.3 at a time in the schedule, the tile copy's 21 guarded loads one: the average is
    the loads over their waits, not the tile copy's 1. Without a schedule, the filter's
    81 copies fly together and the tile copy's loads one at a time."""
    threads = 1_048_576.0
    runs = [((84, 34), 81 * threads, 81), ((99, 35), 21 * threads, 1)]
    assert flying(runs, ((84, 10 / 3), (99, 1.0))) == pytest.approx(102 / (81 * 0.3 + 21))
    assert flying(runs) == pytest.approx(102 / (81 / 81 + 21))
    assert 1 < flying(runs, ((84, 10 / 3), (99, 1.0))) < 10 / 3


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCL_CACHE_DIR", str(tmp_path / "cache"))
    sass._memory.clear()
    compiled._memory.clear()


def _facts(path: Path):  # noqa: ANN202 - KernelFacts
    from mcl.feedback.facts.kernel import build_facts

    library = default_library()
    program = load_program(path, (), library)
    function = program.main.functions[-1]
    return build_facts(function, pipeline.check(program, library), library.get(function.hwd))


@pytest.mark.slow
def test_nvrtc_and_nvdisasm_give_the_stencil_s_code(own_cache, tmp_path: Path) -> None:
    """stencil3d_halo (benchmarks/unseen_corpus): Nsight Compute attributed 27 and 46
    instructions a warp to its first two foreach lines (the division of the block index
    by the sizes) and 165 in all, of which the exit is one (recorded on an H100,
    benchmarks/results/2026-12-06-h100-unseen-held-out.tar.gz); kept on disk after
    the first compile."""
    facts = _facts(ROOT / "benchmarks" / "unseen_corpus" / "stencil3d_halo" / "hopper.mcpl")
    code = sass.line_instructions(facts)
    assert code is not None
    assert code[19][0].instructions == 27 and code[20][0].instructions == 46
    assert sum(c.instructions for parts in code.values() for c in parts) == 165
    assert len(list((tmp_path / "cache" / sass.CACHE_KIND).glob("*" + by_program.SUFFIX))) == 1
    sass._memory.clear()
    assert sass.line_instructions(facts) == code  # from the disk
