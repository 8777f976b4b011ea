"""Arrays against the capacity of the memory that holds their space (mcl.mcpl.capacity):
refused by `mcl check` at the level, with the limit named, never first by the device."""

from __future__ import annotations

from pathlib import Path

from check_support import check_path, check_text, library

from mcl.diagnostics import Severity
from mcl.hdl.library import default_library
from mcl.mcpl.unit_capacity import level_limit

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def capacity_errors(diags: list) -> list:
    return [d for d in diags if d.code == "mcpl-memory-capacity"]


GPU_LOCAL = """\
gpu void k(int n, dev float[n] a) {
  foreach (int b in n / 256 blocks) {
    local float[SIZE] tile;
    foreach (int t in 256 threads) {
      tile[t] = a[b * 256 + t];
      barrier(local);
      a[b * 256 + t] = tile[255 - t];
    }
  }
}
"""


def test_a_constant_array_over_the_capacity_is_an_error_naming_the_limit(tmp_path: Path
                                                                          ) -> None:
    # gpu's on-chip memory holds 16 kB of `local` (paper Fig. 8): 4,097 floats do not fit.
    [d] = capacity_errors(check_text(tmp_path, GPU_LOCAL.replace("SIZE", "4097")))
    assert d.severity == Severity.ERROR
    assert d.message == ("'tile' needs 16,388 B of 'local', but 'gpu' holds 16,384 B of "
                         "'local' (processors.processor.on_chip.capacity)")
    assert d.span is not None and (d.span.line, d.span.column) == (3, 5)


def test_an_array_that_fits_exactly_is_accepted(tmp_path: Path) -> None:
    assert not capacity_errors(check_text(tmp_path, GPU_LOCAL.replace("SIZE", "4096")))


def test_sizes_from_parameters_are_left_to_the_launch(tmp_path: Path) -> None:
    assert not capacity_errors(check_text(tmp_path, GPU_LOCAL.replace("SIZE", "n * 1000")))


HOPPER_TILES = """\
const int T = 3000;
hopper void k(int n, global float[n] a) {
  foreach (int b in n / 256 blocks) {
    shared float[T][4] x;
    shared float[T][4] y;
    shared float[T][4] z;
    shared float[T][4] w;
    shared float[T][COUNT] v;
    foreach (int ww in 8 warps) {
      foreach (int t in 32 threads) {
        reg float[70000] r;
        int i = b * 256 + ww * 32 + t;
        r[0] = a[i];
        a[i] = r[0] + x[t][0] + y[t][0] + z[t][0] + w[t][0] + v[t][0];
      }
    }
  }
}
"""


def test_the_shared_tiles_of_a_block_are_held_together(tmp_path: Path) -> None:
    # 4 x 48,000 B fit hopper's 228 kB of shared memory; a fifth tile does not. The
    # register array is not held to the register file: the compiler spills it.
    [d] = capacity_errors(check_text(tmp_path, HOPPER_TILES.replace("COUNT", "4")))
    assert d.span is not None and d.span.line == 8
    assert d.message.startswith("the arrays of 'shared' declared together here need "
                                "240,000 B ('x' 48,000 B, 'y' 48,000 B,")
    assert "'hopper' holds 233,472 B of 'shared' (smps.smp.on_chip.capacity)" in d.message
    assert not capacity_errors(check_text(tmp_path, HOPPER_TILES.replace("COUNT", "1")))


def test_sibling_foreach_statements_do_not_add_up(tmp_path: Path) -> None:
    two = GPU_LOCAL.replace("SIZE", "3000").replace(
        "gpu void k(int n, dev float[n] a) {\n",
        "gpu void k(int n, dev float[n] a) {\n" + GPU_LOCAL.replace("SIZE", "3000")
        .split("\n", 1)[1].rsplit("}", 1)[0])
    assert two.count("local float[3000] tile;") == 2
    assert not capacity_errors(check_text(tmp_path, two))


def test_no_shipped_kernel_is_refused() -> None:
    for path in sorted(KERNELS.glob("*/*.mcpl")):
        assert not capacity_errors(check_path(path)), path


OWN_ARRAY = """\
LEVEL void k(int n, GLOBAL float[n] a) {
  foreach (int i in n threads) {
    float[SIZE] r;
    r[0] = a[i];
    a[i] = r[0];
  }
}
"""


def own_array(level: str, size: str) -> str:
    space = {"perfect": "", "gpu": "dev", "hopper": "global"}[level]
    return OWN_ARRAY.replace("LEVEL", level).replace("GLOBAL", space).replace("SIZE", size)


def test_a_units_array_no_leaf_below_the_level_keeps_is_an_error(tmp_path: Path) -> None:
    # A thread's own array lives in its registers, which state no capacity at gpu; spilled,
    # it takes device memory for each thread the leaf holds at once. fermi keeps the most
    # of the leaves below gpu: 1.5 GB for its 480 threads.
    [d] = capacity_errors(check_text(tmp_path, own_array("gpu", "2147483647")))
    assert d.severity == Severity.ERROR
    assert d.message == (
        "'r' needs 8,589,934,588 B in each thread, but no leaf below 'gpu' keeps more than "
        "3,355,443 B at 'fermi' (mem.capacity, 1,610,612,736 B, shared by the 480 threads "
        "it holds at once)")
    assert d.span is not None and (d.span.line, d.span.column) == (3, 5)
    assert d.hint is not None and "device memory" in d.hint
    assert not capacity_errors(check_text(tmp_path, own_array("gpu", str(3_355_443 // 4))))


def test_at_a_leaf_its_own_limit_is_named(tmp_path: Path) -> None:
    # hopper: 80 GB for 132 SMs of 2,048 threads each.
    [d] = capacity_errors(check_text(tmp_path, own_array("hopper", "80000")))
    assert d.message.endswith("but 'hopper' keeps at most 317,750 B "
                              "(mem.capacity, 85,899,345,920 B, shared by the 270,336 "
                              "threads it holds at once)")
    assert not capacity_errors(check_text(tmp_path, own_array("hopper", "79437")))


def test_a_leaf_that_states_no_limit_bounds_nothing(tmp_path: Path) -> None:
    # This library has the test descriptions `bare` and `blocked` below perfect, whose
    # memory is unlimited: a thread there may keep any array.
    assert not capacity_errors(check_text(tmp_path, own_array("perfect", "2147483647")))
    assert level_limit(library(), "perfect") is None


def test_the_bundled_leaves_bound_perfect_by_the_roomiest() -> None:
    limit = level_limit(default_library(), "perfect")
    assert limit is not None and limit.leaf == "x86_avx512"
    assert limit.bytes == 25_276_502_016 // 32
    assert limit.bytes < 2_147_483_647 * 4  # so `float[2147483647]` is refused at perfect
