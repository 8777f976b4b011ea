"""A fuzz campaign's inputs are numbered and seeded one by one (`mcl.fuzz.make_input`): input
N of a seed is made without those before it (`--input N` reproduces a failure line's
input), and a campaign split over processes (`--jobs`, mcl.fuzz_jobs) fuzzes the inputs
one process would and prints one summary of them all (docs/reliability.md, "Fuzzing")."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from mcl import fuzz
from mcl.fuzz_jobs import Summary


def test_an_input_is_made_from_its_number_alone() -> None:
    """Input 37 is the same whether or not the inputs before it were made (or ran, with
    whatever outcome: the old campaigns drew every input from one generator, so an
    input's text depended on how the inputs before it ended)."""
    alone = fuzz.make_input("mcpl", 602, 37, 0.5)
    for number in range(37):
        fuzz.make_input("mcpl", 602, number, 0.5)
    again = fuzz.make_input("mcpl", 602, 37, 0.5)
    assert (alone.name, alone.text, alone.generated) == (again.name, again.text,
                                                         again.generated)
    assert alone.rng.random() == again.rng.random()  # and so are the commands' choices
    texts = {fuzz.make_input("mcpl", 602, n, 0.5).text for n in range(40)}
    assert len(texts) > 30  # the inputs differ from one another
    assert fuzz.make_input("hdl", 602, 37).text != alone.text


def test_the_input_of_a_failure_line_is_reproduced(tmp_path: Path) -> None:
    """`--input N` fuzzes input N alone and saves its text under --save."""
    save = tmp_path / "saved"
    status = fuzz.main(["--seed", "602", "--mcpl", "1", "--hdl", "0", "--budget", "20",
                        "--input", "5", "--save", str(save),
                        "--summary", str(tmp_path / "summary.json")])
    (kept,) = save.glob("mcpl-602-5-*")
    assert kept.read_text(encoding="utf-8") == fuzz.make_input("mcpl", 602, 5, 0.3).text
    summary = Summary.read(tmp_path / "summary.json")
    assert summary.inputs["mcpl"] == 1
    assert status == (1 if summary.failures else 0)


def test_jobs_share_the_inputs_of_one_campaign() -> None:
    """Every input number goes to exactly one job of its kind; HDL inputs (quick) to one
    job in eight."""
    args = fuzz._parser().parse_args(["--jobs", "16", "--mcpl", "1000", "--hdl", "100",
                                      "--minutes", "8", "--seed", "7"])
    lines = fuzz._job_lines(args)
    assert len(lines) == 16
    shards: dict[str, list[tuple[int, int]]] = {"mcpl": [], "hdl": []}
    for line in lines:
        options = dict(zip(line[3::2], line[4::2], strict=False))
        kind = "mcpl" if options["--mcpl"] != "0" else "hdl"
        job, jobs = fuzz._shard(options["--shard"])
        shards[kind].append((job, jobs))
        assert options["--seed"] == "7" and float(options["--minutes"]) == 8
    assert len(shards["hdl"]) == 2 and len(shards["mcpl"]) == 14
    for kind, count in (("mcpl", 1000), ("hdl", 100)):
        numbers = [n for job, jobs in shards[kind] for n in range(job, count, jobs)]
        assert sorted(numbers) == list(range(count))


def test_the_summary_adds_up_the_jobs(tmp_path: Path) -> None:
    """Two jobs of a small campaign: the summed summary counts every input once, as
    the same campaign in one process does."""
    common = ["--seed", "11", "--mcpl", "6", "--hdl", "2", "--budget", "20",
              "--generated", "0.3", "--execute", "0", "--save", str(tmp_path / "saved")]
    one = tmp_path / "one.json"
    two = tmp_path / "two.json"
    subprocess.run([sys.executable, "-m", "mcl.fuzz", *common, "--summary", str(one)],
                   capture_output=True, text=True, timeout=600, check=False)
    done = subprocess.run([sys.executable, "-m", "mcl.fuzz", *common, "--jobs", "2",
                           "--summary", str(two)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert "MCPL and 2 HDL inputs" in done.stdout and "2 jobs" in done.stdout
    alone, split = Summary.read(one), Summary.read(two)
    assert split.jobs == 2
    assert Counter(split.inputs) == Counter(alone.inputs)
    assert split.inputs["mcpl"] == 6 and split.inputs["hdl"] == 2
    assert json.loads(two.read_text(encoding="utf-8"))["failures"] == alone.failures
