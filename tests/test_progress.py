"""Progress where stderr is no terminal (mcl.progress): plain lines now and then, never
on stdout, none with --quiet; a step that ends quickly shows nothing."""

from __future__ import annotations

import time

import pytest

from mcl.progress import Progress, Timings, waiting


def test_steps_give_plain_lines_at_most_every_few_seconds(
        capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("report", 3, every_s=3600) as progress:
        for name in ("perfect", "gpu_v1", "hopper_v1"):
            progress.step(f"running {name}")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == ["mcl report: running perfect (1 of 3, 0 s)"]


def test_every_step_when_the_interval_has_passed(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("tune", every_s=0.0) as progress:
        progress.step("tuning a")
        progress.step("tuning b")
        progress.say("a line of the log")
    assert capsys.readouterr().err.splitlines() == [
        "mcl tune: tuning a (0 s)", "mcl tune: tuning b (0 s)", "mcl tune: a line of the log"]


def test_quiet_shows_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("refine", 2, quiet=True, every_s=0.0) as progress:
        progress.step("a")
        progress.say("b")
    with waiting("report", "analysing", quiet=True, delay=0.0):
        time.sleep(0.2)
    assert capsys.readouterr() == ("", "")


def test_a_long_step_shows_one_line_a_quick_one_none(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    timings = Timings("run")
    with timings.step("quick", "making inputs", delay=5.0):
        pass
    with timings.step("long", "building", delay=0.05):
        time.sleep(0.5)
    assert capsys.readouterr().err.splitlines() == ["mcl run: building ..."]
    assert set(timings) == {"quick", "long"}


def test_plain_lines_fit_the_width(capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    Progress("apply").say("checking, verifying and weighing every offer of the kernel")
    assert max(len(line) for line in capsys.readouterr().err.splitlines()) <= 40


def test_refine_and_apply_log_their_steps_on_stderr_unless_quiet(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Piped, `mcl refine` and `mcl apply` print each step on stderr, in text and JSON
    format alike (stdout keeps the report or the document); --quiet prints none."""
    from mcl.commands import apply, refine

    for module in (refine, apply):
        module._progress(False)("step 1: version 0: checking")
        module._progress(True)("step 2")
    assert capsys.readouterr() == ("", "mcl refine: step 1: version 0: checking\n"
                                       "mcl apply: step 1: version 0: checking\n")


@pytest.mark.parametrize("argv", [
    ["refine", "k.mcpl", "--target", "fermi"], ["apply", "k.mcpl"],
    ["tune", "k.mcpl", "--target", "fermi"], ["report", "kernels/matmul"], ["run", "k.mcpl"]])
def test_the_long_commands_take_quiet(argv: list[str]) -> None:
    from mcl.cli import build_parser

    assert build_parser(argv[0]).parse_args([*argv, "--quiet"]).quiet
    assert not build_parser(argv[0]).parse_args(argv).quiet
