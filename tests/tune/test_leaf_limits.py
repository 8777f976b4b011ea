"""`mcl tune` rules out a configuration whose shared tile a block of the leaf cannot have:
at hopper 232,448 B (228 kB less the 1 kB reserved for every block, in 128 B units), the
limit the check's `mcpl-block-resources` refusal uses, not the 233,472 B of the
description's capacity (docs/performance.md, the row on limits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import generate_module, load_mapping
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.tune.leaf_limits import shared_bytes_per_block
from mcl.tune.space import description_problems

TILE = """
const int N = {n};
hopper void fill(int n, global float[n] out) {{
  foreach (int b in n / 256 blocks) {{
    shared float[N] tile;
    foreach (int w in 8 warps) {{
      foreach (int t in 32 threads) {{
        int g = (b * 8 + w) * 32 + t;
        tile[g % N] = 1.0;
        out[g] = 2.0;
      }}
    }}
  }}
}}
"""


def test_the_limit_is_the_leafs_per_block_share() -> None:
    library = default_library()
    assert shared_bytes_per_block(library.get("hopper"), 233_472) == 232_448
    assert shared_bytes_per_block(library.get("fermi"), 49_152) == 49_152
    # a leaf without allocation rules: its capacity
    assert shared_bytes_per_block(library.get("x86_avx512"), 1_000) == 1_000


@pytest.mark.parametrize(("floats", "refused"), [(58_112, False), (58_113, True),
                                                 (58_368, True)])
def test_tune_rules_out_a_tile_past_the_share_of_one_block(
        tmp_path: Path, floats: int, refused: bool) -> None:
    library = default_library()
    hwd = library.get("hopper")
    path = tmp_path / "tile.mcpl"
    path.write_text(TILE.format(n=floats))
    program = load_program(path, (), library)
    generated = generate_module(pipeline.check(program, library), "hopper", library)
    problems = description_problems(generated, hwd, load_mapping(hwd),
                                    {"n": 1024, "N": floats}, "fill")
    assert bool(problems) == refused, problems
    if refused:
        assert problems == [f"{floats * 4} bytes of local memory per work-group; hopper gives "
                            "one work-group at most 232448 of its 233472"]
