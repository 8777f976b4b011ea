"""The code lens reads the time model's typed finding (`TimeEstimate`, sent by the
worker as an `EstimateRecord`), not the message's text: rewording the message leaves
the lens as it was."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mcl.lsp import worker
from mcl.lsp.analysis import Libraries
from mcl.lsp.lenses import code_lenses, lens_title
from mcl.lsp.worker import EstimateRecord, FeedbackJob, FeedbackResult
from mcl.mcpl.parse import parse_source

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "matmul" / "hopper_v2.mcpl"
SIZES = (("n", 2048), ("m", 2048), ("p", 2048))  # as the editor test gives them


def test_the_lens_comes_from_the_typed_estimate_whatever_the_text(libraries: Libraries
                                                                  ) -> None:
    text = KERNEL.read_text()
    result = FeedbackResult()
    worker._run(FeedbackJob(str(KERNEL), ((str(KERNEL), text),), (), (), "gpu", SIZES),
                libraries, result)
    assert result.failure is None
    (record,) = [m for m in result.messages if m.estimate is not None]
    assert record.code == "time-estimate" and record.estimate is not None
    # the figures the message states: `time estimate: 740 µs over ..., limited by X: the
    # launch ...`
    estimate = record.estimate
    assert record.text.startswith(f"time estimate: {estimate.time} ")
    assert f", limited by {estimate.limit}: the launch " in record.text
    title = f"estimated {estimate.time} at hopper, limited by {estimate.limit}"
    module = parse_source(text, str(KERNEL))
    library = libraries.get(())
    (lens,) = code_lenses(module, result.messages, library, "gpu")
    assert lens.command is not None and lens.command.title == title
    reworded = [dataclasses.replace(m, text="the model says: " + m.text[::-1])
                for m in result.messages]
    (lens,) = code_lenses(module, reworded, library, "gpu")
    assert lens.command is not None and lens.command.title == title
    # without the typed estimate, no lens, even where the text is the estimate's
    bare = [dataclasses.replace(m, estimate=None) for m in result.messages]
    assert code_lenses(module, bare, library, "gpu") == []


def test_an_undecided_estimate_shows_its_range() -> None:
    assert lens_title(EstimateRecord("585 µs", "device memory", "120 µs"), "hopper") == \
        "estimated 120 µs to 585 µs at hopper, limited by device memory"
