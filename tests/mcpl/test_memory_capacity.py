"""Arrays against the capacity of the memory that holds their space (mcl.mcpl.capacity):
refused by `mcl check` at the level, with the limit named, never first by the device."""

from __future__ import annotations

from pathlib import Path

from check_support import check_path, check_text

from mcl.diagnostics import Severity

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
