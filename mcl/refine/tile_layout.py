"""tile-2d-prefetch's options `vector_reads` and `lanes_i`: the layout of
kernels/matmul/hopper_v4, whose threads read their operands from the staged tiles in
128-bit loads and whose warps each cover a compact 2-D part of the block's tile.

tile-2d lays a thread's elements THREADS_I rows and THREADS_J columns apart: side by side
the threads of a warp read consecutive words of the tiles, but each of a thread's reads
is one word, and `a`'s tile, stored as `a` is ([row][k]), is read down a column. With
`vector_reads=VEC` a thread's rows and its columns come in groups of VEC consecutive
ones, and every tile is stored along k first ([k][row], `a`'s transposed as the block
stores it, its rows padded so that the transposing stores of a warp fall in distinct
banks): a group of a thread's operands is VEC consecutive words of a row of the tile,
which the CUDA and OpenCL emitters copy as one vector (mcl.codegen.vectorize, at
`codegen.vector_width`), aligned because every term of its index is a multiple of VEC.
Per step of k a thread with a 16 x 8 tile then makes 4 + 2 128-bit reads for its 128
multiply-adds instead of 16 + 8 32-bit ones.

With `lanes_i=LANES_I` the block's tile is cut first among its warps (WARPS_I x WARPS_J
warp tiles) and then among a warp's lanes (LANES_I x LANES_J), as the paper's hierarchy
of warps and threads has it (section 3): the reads of a warp in one step of k touch
LANES_I groups of `a`'s tile and LANES_J of `b`'s, each broadcast to the lanes that share
it; with tile-2d's layout a warp of a 128-thread block spans two rows of 16 threads, and
its 16 groups of `b` (256 bytes) take two shared-memory wavefronts (hopper_v4's header).

Each element still adds its terms in the order it did; only which thread computes it,
and where the tiles keep the operands, change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcl.mcpl import ast
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import fresh_names
from mcl.refine.refinement import Refused, integer
from mcl.refine.tile_2d import TilePlan
from mcl.refine.tile_2d_shared import Staged, index_names
from mcl.refine.unit_rows import text_of

# The vector widths of a group: up to 128 bits of 4-byte elements.
VECTOR_READS = (1, 2, 4)
# Shared memory's banks of 4 bytes each (every level mcl targets has 32).
BANKS = 32


@dataclass(frozen=True)
class Grouped:
    """The threads over the tile in groups of `vec` rows and columns, in warp tiles where
    `lanes_i` is given, and the staged tiles stored along k first: tile_2d.Layout and
    tile_2d_shared.StagedLayout."""

    plan: TilePlan
    k: str
    tile_k: str
    lanes: str
    vec: int
    lanes_i: int | None
    names: dict[str, str]
    pads: dict[str, tuple[str, int]]
    args: tuple[tuple[str, str], ...]
    summary: str

    def constants(self) -> list[str]:
        x, n = self.names, self.plan.names
        out = [f"// tile-2d-prefetch: a thread's rows and columns in groups of {x['VEC']} "
               "consecutive ones, each group of its",
               "// operands one read of the tiles (128 bits at 4), the tiles stored along "
               "the reduction first",
               "// tune: 1, 2, 4",
               f"// require: {n.elems_i} % {x['VEC']} == 0 && {n.elems_j} % {x['VEC']} == 0",
               f"const int {x['VEC']} = {self.vec};"]
        for array, (pad, value) in self.pads.items():
            out += [f"// the rows of the transposed {array} padded: a warp's transposing "
                    "stores in distinct banks, rows",
                    f"// aligned for the groups' reads (a multiple of {x['VEC']})",
                    f"const int {pad} = {value};"]
        if self.lanes_i is None:
            return out
        return [*out,
                f"// warp tiles: the block's {n.tile_i} x {n.tile_j} cut among its warps "
                f"({n.threads_i} / {x['LANES_I']} x {x['WARPS_J']}),",
                f"// each warp's {x['WARP_TILE_I']} x {x['WARP_TILE_J']} among its lanes "
                f"({x['LANES_I']} x {x['LANES_J']})",
                "// tune: 1, 2, 4, 8, 16, 32",
                f"// require: {self.lanes} % {x['LANES_I']} == 0 && {n.threads_i} % "
                f"{x['LANES_I']} == 0 && {n.threads_j} % ({self.lanes} / {x['LANES_I']}) == 0",
                f"const int {x['LANES_I']} = {self.lanes_i};",
                f"const int {x['LANES_J']} = {self.lanes} / {x['LANES_I']};",
                f"const int {x['WARPS_J']} = {n.threads_j} / {x['LANES_J']};",
                f"const int {x['WARP_TILE_I']} = {x['LANES_I']} * {n.elems_i};",
                f"const int {x['WARP_TILE_J']} = {x['LANES_J']} * {n.elems_j};"]

    def place(self, indent: str) -> list[str]:
        x, n, shape = self.names, self.plan.names, self.plan.shape
        w, t = shape.warps.var, shape.threads.var
        row, column = self.plan.row.name, shape.row
        unit = f"{indent}int {n.unit} = {w} * {self.lanes} + {t};"
        if self.lanes_i is None:
            return [f"{indent}// thread ({n.ui}, {n.uj}) of the block's {n.threads_i} x "
                    f"{n.threads_j} computes the elements",
                    f"{indent}// {row} = {self.plan.row.foreach.var} * {n.tile_i} + "
                    f"{self.offset('i')}, {column} likewise",
                    unit,
                    f"{indent}int {n.ui} = {n.unit} / {n.threads_j};",
                    f"{indent}int {n.uj} = {n.unit} % {n.threads_j};"]
        return [f"{indent}// lane ({x['li']}, {x['lj']}) of warp ({x['wi']}, {x['wj']}) "
                "computes the elements",
                f"{indent}// {row} = {self.plan.row.foreach.var} * {n.tile_i} + "
                f"{self.offset('i')}, {column} likewise",
                unit,
                f"{indent}int {x['wi']} = {w} / {x['WARPS_J']};",
                f"{indent}int {x['wj']} = {w} % {x['WARPS_J']};",
                f"{indent}int {x['li']} = {t} / {x['LANES_J']};",
                f"{indent}int {x['lj']} = {t} % {x['LANES_J']};"]

    def offset(self, kind: str) -> str:
        n, vec = self.plan.names, self.names["VEC"]
        e = n.ei if kind == "i" else n.ej
        return self._at(kind, f"({e} / {vec})", f"{e} % {vec}")

    def _at(self, kind: str, group: str, within: str) -> str:
        """The row (`kind` "i") or column ("j") in the block's tile of the thread's
        group `group` and element `within` of it: every term but `within` a multiple of
        VEC, so that a group's reads are aligned vectors."""
        x, n, vec = self.names, self.plan.names, self.names["VEC"]
        if self.lanes_i is None:
            threads, unit = (n.threads_i, n.ui) if kind == "i" else (n.threads_j, n.uj)
            return f"{group} * {threads} * {vec} + {unit} * {vec} + {within}"
        side = kind.upper()
        return (f"{x['w' + kind]} * {x['WARP_TILE_' + side]} + {group} * "
                f"{x['LANES_' + side]} * {vec} + {x['l' + kind]} * {vec} + {within}")

    def declared(self, s: Staged) -> Sequence[str]:
        own = next(d for d, x in zip(s.dims, index_names(s.access), strict=True)
                   if x != self.k)
        pad = self.pads.get(s.array)
        return (self.tile_k, f"{own} + {pad[0]}" if pad else own)

    def at_tile(self, s: Staged, parts: Sequence[str]) -> str:
        """The tile's indices of the element whose indices in the access's order are
        `parts`: k first."""
        by_name = dict(zip(index_names(s.access), parts, strict=True))
        own = next(p for x, p in by_name.items() if x != self.k)
        return f"[{by_name[self.k]}][{own}]"

    def reads(self, at: str, step: str, buffer: str, staged: Sequence[Staged], kk: str
              ) -> list[str]:
        """The loop over the phase's iterations, opened, and its reads of the thread's
        groups of operands from the tiles into registers, a group a loop over VEC
        contiguous words that the emitters copy as one vector."""
        x, n, vec = self.names, self.plan.names, self.names["VEC"]
        g, v = x["g"], x["v"]
        deeper, deepest = at + step, at + step * 2
        out = [f"{at}for (int {kk} = 0; {kk} < {self.tile_k}; {kk}++) {{"]
        for s in staged:
            kind = s.hoisted.kind
            elems = n.elems_i if kind == "i" else n.elems_j
            out += [f"{deeper}for (int {g} = 0; {g} < {elems} / {vec}; {g}++) {{",
                    f"{deepest}for (int {v} = 0; {v} < {vec}; {v}++) {{",
                    f"{deepest}{step}{s.hoisted.register}[{g} * {vec} + {v}] = "
                    f"{s.array}{buffer}[{kk}][{self._at(kind, g, v)}];",
                    f"{deepest}}}",
                    f"{deeper}}}"]
        return out


def grouped(kernel: KernelAtLevel, plan: TilePlan, args: Mapping[str, str], loop: ast.For,
            staged: Sequence[Staged], tile_k: str, tile_k_value: int, taken: set[str]
            ) -> Grouped | None:
    """The layout `args` ask for (`vector_reads`, `lanes_i`), None where they ask for
    tile-2d's; Refused where the tile does not split into them."""
    vec = integer(args, "vector_reads", 1)
    lanes_i = integer(args, "lanes_i") if "lanes_i" in args else None
    if vec == 1 and lanes_i is None:
        return None
    shape = plan.shape
    threads_j = plan.threads // plan.threads_i
    if vec not in VECTOR_READS or plan.elems_i % vec or plan.elems_j % vec:
        raise Refused(f"vector_reads={vec}: one of {', '.join(map(str, VECTOR_READS))} "
                      f"that divides the tile's {plan.elems_i} x {plan.elems_j}")
    if lanes_i is not None and (lanes_i < 1 or shape.lanes_n % lanes_i
                                or plan.threads_i % lanes_i
                                or threads_j % (shape.lanes_n // lanes_i)):
        raise Refused(f"lanes_i={lanes_i}: it divides the warp's {shape.lanes_n} lanes and "
                      f"the block's {plan.threads_i} rows of threads, and the lanes' "
                      f"columns divide its {threads_j}")
    wanted = ("VEC", "LANES_I", "LANES_J", "WARPS_J", "WARP_TILE_I", "WARP_TILE_J",
              "wi", "wj", "li", "lj", "g", "v")
    names = dict(zip(wanted, fresh_names(wanted, taken), strict=True))
    taken |= set(names.values())
    tile_i = plan.threads_i * plan.elems_i
    pads: dict[str, tuple[str, int]] = {}
    for s in staged:
        if index_names(s.access)[0] != loop.var:
            (pad,) = fresh_names((f"{s.array.upper()}_PAD",), taken)
            taken.add(pad)
            own = tile_i if s.hoisted.kind == "i" else threads_j * plan.elems_j
            pads[s.array] = (pad, transposing_pad(own, tile_k_value, vec))
    more = (*((("vector_reads", str(vec)),) if vec > 1 else ()),
            *((("lanes_i", str(lanes_i)),) if lanes_i else ()))
    summary = (f"; each thread's rows and columns in groups of {vec}, read from the tiles "
               "as vectors" if vec > 1 else "") + (
        f"; warp tiles of {lanes_i * plan.elems_i} x "
        f"{shape.lanes_n // lanes_i * plan.elems_j} elements" if lanes_i else "")
    return Grouped(plan, loop.var, tile_k, text_of(kernel, shape.threads.count), vec,
                   lanes_i, names, pads, more, summary)


def warp_lanes(lanes: int, threads_i: int, threads: int, elems_i: int, elems_j: int
               ) -> int | None:
    """The rows of lanes (LANES_I) of the squarest warp tile a block of `threads` threads
    in `threads_i` rows allows (the fewest groups a warp reads per step of k for its
    multiply-adds), the fewer rows on a tie; None where none does."""
    threads_j = threads // threads_i
    fitting = [rows for rows in range(1, lanes + 1)
               if lanes % rows == 0 and threads_i % rows == 0
               and threads_j % (lanes // rows) == 0]
    if not fitting:
        return None
    return min(fitting, key=lambda rows: (abs(rows * elems_i - lanes // rows * elems_j), rows))


def transposing_pad(rows: int, tile_k: int, vec: int) -> int:
    """The padding, a multiple of `vec` (the groups' reads stay aligned), of a tile's
    rows of `rows` words after which a warp's stores of a [rows][tile_k] block of its
    operand into the transposed tile ([tile_k][rows + pad], consecutive lanes along k)
    meet the fewest times in one bank."""
    def conflicts(pad: int) -> int:
        banks: dict[int, int] = {}
        for lane in range(BANKS):
            word = lane % tile_k * (rows + pad) + lane // tile_k
            banks[word % BANKS] = banks.get(word % BANKS, 0) + 1
        return max(banks.values())
    return min(range(0, BANKS, vec), key=lambda pad: (conflicts(pad), pad))
