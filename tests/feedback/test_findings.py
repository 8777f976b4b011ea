"""The findings records (mcl.feedback.findings; docs/feedback.md, "Findings"): every
analysis returns findings, each record type is what its code's messages come as, and the
changes the suggestions propose name the access, the array and the loops by name and
span, with the parameters of the change."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KERNELS, load_kernel

from mcl import pipeline
from mcl.feedback import findings as records
from mcl.feedback.findings import (
    BankConflictFinding,
    ComputeSeveralElements,
    Finding,
    KeepInRegister,
    OccupancyFinding,
    PrivatisationProposal,
    PrivatiseArray,
    RaiseOccupancy,
    RegisterReload,
    RemoveBankConflict,
    RooflineFinding,
    SeveralElementsProposal,
    ShareInFasterMemory,
    TimeEstimate,
    TransferTotals,
    UncoalescedAccess,
    code_of,
)
from mcl.feedback.registry import analyse, analyse_findings

FIXTURES = Path(__file__).parent / "kernels"

# Every record type that declares a code, by that code.
RECORD_TYPES = {kind.CODE.code: kind for kind in vars(records).values()
                if isinstance(kind, type) and issubclass(kind, Finding)
                and kind.CODE is not None}


def _findings(name: str, values: dict) -> list[Finding]:
    program, library = load_kernel(FIXTURES / f"{name}.mcpl")
    function = program.main.functions[-1]
    return analyse_findings(function, pipeline.check(program, library),
                            library.get(function.hwd), values)


def test_the_record_types_declare_distinct_codes() -> None:
    assert {"occupancy", "uncoalesced", "bank-conflict", "memory-register", "roofline",
            "time-estimate", "transfers-total"} <= set(RECORD_TYPES)
    assert code_of(OccupancyFinding) == "occupancy"


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.mcpl")))
def test_every_fixture_kernel_gives_records_of_its_codes(name: str) -> None:
    found = _findings(name, {})
    assert found and all(isinstance(f, Finding) for f in found)
    for f in found:
        kind = RECORD_TYPES.get(f.code)
        # a code with a record type comes as that record (a plain finding of it would
        # be invisible to the time model and to mcl profile); a roofline that cannot be
        # decided (a count divides by zero) has no figures to type
        undecided = f.code == "roofline" and "cannot be decided" in f.message.text
        assert kind is None or isinstance(f, kind) or undecided, (name, f.code)
        if f.change is not None and hasattr(f.change, "access"):
            access = f.change.access
            assert access.span is not None and access.span.file.endswith(f"{name}.mcpl")
            assert access.text.startswith(access.array)


def test_the_messages_are_the_findings_messages() -> None:
    program, library = load_kernel(FIXTURES / "fermi_rows.mcpl")
    function = program.main.functions[-1]
    checked = pipeline.check(program, library)
    values = {"n": 4096}
    found = analyse_findings(function, checked, library.get(function.hwd), values)
    assert analyse(function, checked, library.get(function.hwd), values) == \
        [f.message for f in found]


def test_a_bank_conflict_names_its_array_access_and_degree() -> None:
    (conflict,) = [f for f in _findings("fermi_banks", {"n": 4096})
                   if isinstance(f, BankConflictFinding)]
    change = conflict.conflict
    assert isinstance(change, RemoveBankConflict)
    assert (change.access.array, change.access.text, change.access.kind) == (
        "tile", "tile[t * 32]", "store")
    assert change.access.space == "shared" and change.access.span.line == 8
    assert (change.degree, change.banks, change.word_bytes) == (32, 32, 4)
    assert [loop.name for loop in change.access.loops][0] == "b"
    assert change.warp_executions is not None and change.warp_executions > 0


def test_an_uncoalesced_load_names_its_lines() -> None:
    (strided,) = [f for f in _findings("fermi_rows", {"n": 4096})
                  if isinstance(f, UncoalescedAccess)]
    change = strided.coalesce
    assert (change.access.array, change.access.text, change.access.kind) == (
        "a", "a[i, k]", "load")
    assert change.lines > change.minimum_lines and change.line_bytes == 128
    assert change.extra_bytes == pytest.approx(
        change.warp_executions * (change.lines - change.minimum_lines) * 128)
    assert strided.transactions_saved is not None and 0 < strided.transactions_saved <= 1


def test_a_register_hint_names_the_loop_to_hoist_out_of() -> None:
    found = _findings("uniform_weight_hopper", {"n": 1 << 20, "rows": 16, "cols": 64})
    (hint,) = [f for f in found if isinstance(f, RegisterReload)]
    keep = hint.keep
    assert isinstance(keep, KeepInRegister)
    assert keep.access.array == "weight" and keep.access.text == "weight[r]"
    assert [(loop.name, loop.kind) for loop in keep.loops] == [("k", "for")]
    assert keep.iterations.numeric == 64 and keep.through_cache
    assert hint.gain is not None  # the time model weighed it
    # the figures every analysis states for the kernel are records too
    for kind in (TransferTotals, OccupancyFinding, RooflineFinding, TimeEstimate):
        assert [f for f in found if isinstance(f, kind)], kind.__name__
    estimate = next(f for f in found if isinstance(f, TimeEstimate))
    assert estimate.seconds > 0 and dict(estimate.terms)["latency"] > 0


def test_an_occupancy_change_states_the_warps_it_gives() -> None:
    found = _findings("hopper_small_grid", {"n": 131072})
    (occupancy,) = [f for f in found if isinstance(f, OccupancyFinding)]
    change = occupancy.raise_occupancy
    assert isinstance(change, RaiseOccupancy)
    assert (change.warps_per_sm, change.warps_per_sm_after) == (32, 64)
    assert occupancy.grid_blocks == 512 and change.limits == ("the grid",)
    assert occupancy.gain is not None and occupancy.gain.factor > 1


def _kernel_findings(path: Path, level: str, values: dict) -> list[Finding]:
    program, library = load_kernel(path, level)
    function = program.main.functions[-1]
    return analyse_findings(function, pipeline.check(program, library),
                            library.get(function.hwd), values)


def test_a_privatisation_names_the_copy_its_owners_and_sharers() -> None:
    found = _kernel_findings(KERNELS / "histogram" / "perfect.mcpl", "gpu",
                             {"h": 16384, "w": 16384})
    (proposal,) = [f for f in found if isinstance(f, PrivatisationProposal)]
    change = proposal.change
    assert isinstance(change, PrivatiseArray)
    assert change.array == "hist" and change.store.kind == "store"
    assert (change.space, change.faster) == ("local", True)
    assert {loop.group for loop in change.owners} == {"blocks"}  # a 2-D grid of blocks
    assert {loop.group for loop in change.sharers} == {"threads"}
    assert change.copy_bytes.numeric == 1024


def test_several_elements_names_the_output_and_the_foreach_to_split() -> None:
    found = _kernel_findings(KERNELS / "matmul" / "perfect.mcpl", "gpu",
                             {"n": 1000, "m": 1000, "p": 1000})
    (proposal,) = [f for f in found if isinstance(f, SeveralElementsProposal)]
    change = proposal.change
    assert isinstance(change, ComputeSeveralElements)
    assert (change.array, change.store.text) == ("c", "c[i, j]")
    assert change.loop.kind == "foreach" and change.loop.name == "bi"
    assert change.units.numeric is not None and change.resident.numeric is not None
    assert change.units.numeric > change.resident.numeric
    shares = [f.change for f in found if isinstance(f.change, ShareInFasterMemory)]
    assert shares and all(s.space == "local" and s.current == "dev" for s in shares)
