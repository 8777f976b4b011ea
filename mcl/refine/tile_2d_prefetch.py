"""tile-2d-prefetch: tile-2d-shared's staged tile with the next phase's operands loaded
into registers while the block computes on the current phase's, the shape of
kernels/matmul/hopper_v2 and hopper_v4's loads (software pipelining).

tile-2d-shared loads a phase's tiles, waits at a barrier, computes, and waits at a
second barrier: between the loads and the compute nothing else runs in the thread, so
the latency of device memory is hidden only by the other warps of the SM (hopper_v1
keeps 16 of 64). Here each thread loads its elements of phase l + 1 into registers
before the compute of phase l and stores them into the other half of double-buffered
tiles at the start of phase l + 1: the loads are in flight during the compute, and one
barrier per phase suffices (a buffer is written two phases after it was read, and every
thread has passed the barrier in between).

The loads are unconditional, at addresses clamped inside the arrays (`min(i, n - 1)`),
and the tests move to the stores into the tiles, which put zeros for the iterations
past the loop's end: NVIDIA's compiler moves a load under `if (l + 1 < phases)` down to
its use after the compute, and a select right after a load waits for it (the SASS of
hopper_v2 and hopper_v4, docs/performance-log.md, "Performance at the limit: matmul").
Rows past the row's bound and columns past the column's load clamped values instead of
zeros: they reach only the elements the tail does not store.

The time model charges the same loads and the same shared-memory traffic for both forms;
where the compiler places a load, and so how much of its latency a thread hides, it
does not see. So the refinement is offered only to a search that measures
(`Refinement.measured_only`)."""

from __future__ import annotations

from collections.abc import Mapping

from mcl.mcpl import ast
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import fresh_names
from mcl.refine.refinement import Parameter, Proposal, Refused, for_loop_at
from mcl.refine.tile_2d import Hoisted, TilePlan, reduction_shape, zero_of
from mcl.refine.tile_2d_shared import (
    PhaseOperands,
    Staged,
    StagedLayout,
    Tile2DShared,
    index_names,
    threads_text,
)
from mcl.refine.tile_layout import Grouped, grouped, warp_lanes
from mcl.refine.unit_rows import text_of


class Tile2DPrefetch(Tile2DShared):
    name = "tile-2d-prefetch"
    summary = ("tile-2d-shared with double-buffered tiles: the next phase's operands "
               "loaded into registers during the current phase's compute, one barrier "
               "per phase")
    parameters = (*Tile2DShared.parameters,
                  Parameter("vector_reads", "a thread's rows and columns in groups of this "
                            "many consecutive ones, each read from the tiles as one vector "
                            "(1, 2 or 4; the tiles stored along the reduction first)",
                            optional=True),
                  Parameter("lanes_i", "warp tiles: the block's tile cut among its warps, "
                            "each warp's among its lanes, this many rows of lanes",
                            optional=True))
    preconditions = Tile2DShared.preconditions
    measured_only = ("the time model charges the same loads and shared-memory traffic as "
                     "tile-2d-shared's; how much latency the prefetch hides depends on "
                     "where the compiler issues the loads, which it does not see: only a "
                     "search that measures (`mcl refine --measure`) weighs it; apply it "
                     "by name to try it")
    buffers = 2
    loaded_how = ("double-buffered: each phase's loaded into registers during the "
                  "previous phase's compute")

    def header(self, tile_k: str, var: str, staged: list[Staged]) -> list[str]:
        arrays = " and ".join(s.array for s in staged)
        return [f"// tile-2d-prefetch: {tile_k} iterations of the loop over {var} per "
                "phase, the tiles of the operands",
                f"// {arrays} in two buffers: each phase's loaded into registers during "
                "the previous phase's compute"]

    # hopper_v1's and v2's 8 x 8 tile, and hopper_v4's 16 x 8 (a 128 x 128 tile of
    # 128 threads there).
    shapes = ((8, 8), (16, 8))
    # The tiles also proposed in hopper_v4's layout (vector_reads=4 and warp tiles,
    # mcl.refine.tile_layout): its 16 x 8, the fastest of the sweep of its constants on
    # the H100 (docs/performance.md); every proposal of a measured-only refinement is
    # verified and timed by the search, so the list is kept short.
    grouped_shapes = ((16, 8),)

    def fitting(self, kernel: KernelAtLevel, line: int, elems_i: int, elems_j: int
                ) -> list[Proposal]:
        """Each tile at half the largest block whose registers the tile-2d rule says it
        fits, where the block's constant allows it: the prefetched elements and the
        addresses the compiler keeps take more registers than the rule counts (NVRTC:
        the 8 x 8 tile at 512 threads spills at the launch bound's 128 registers), and
        every proposal of a measured-only refinement is verified and timed. The tiles of
        `grouped_shapes` also with 128-bit reads of the tiles and the squarest warp
        tiles the block allows."""
        found = super().fitting(kernel, line, elems_i, elems_j)[-1:]
        if (elems_i, elems_j) not in self.grouped_shapes or not found:
            return found
        args = dict(found[0].args)
        shape = reduction_shape(kernel, for_loop_at(kernel, line))
        threads = int(args.get("threads", shape.warps_n * shape.lanes_n))
        lanes_i = warp_lanes(shape.lanes_n, int(args["threads_i"]), threads,
                             elems_i, elems_j)
        if elems_i % 4 or elems_j % 4 or lanes_i is None:
            return found
        try:
            return [*found, self.propose(kernel, {**args, "vector_reads": "4",
                                                  "lanes_i": str(lanes_i)})]
        except Refused:
            return found

    def layout_of(self, kernel: KernelAtLevel, plan: TilePlan, args: Mapping[str, str],
                  loop: ast.For, staged: list[Staged], tile_k: tuple[str, int],
                  taken: set[str]) -> StagedLayout | None:
        return grouped(kernel, plan, args, loop, staged, *tile_k, taken)

    def phase_operands(self, kernel: KernelAtLevel, plan: TilePlan, loop: ast.For,
                       staged: list[Staged], space: str,
                       names: tuple[str, str, str, str, str], taken: set[str],
                       layout: StagedLayout | None) -> PhaseOperands:
        wanted = ("cur", *(f"next_{s.array.removeprefix('tile_')}" for s in staged))
        cur, *nexts = fresh_names(wanted, taken)
        taken |= {cur, *nexts}
        assert layout is None or isinstance(layout, Grouped)
        return _Prefetched(kernel, plan, loop, staged, space, names, cur, nexts, layout)


class _Prefetched(PhaseOperands):
    """The phases double-buffered: before the loop the first phase's operands are loaded
    into registers; each phase stores them into its buffer, a barrier, loads the next
    phase's into the registers and computes from its buffer."""

    def __init__(self, kernel: KernelAtLevel, plan: TilePlan, loop: ast.For,
                 staged: list[Staged], space: str, names: tuple[str, str, str, str, str],
                 cur: str, nexts: list[str], layout: Grouped | None):
        super().__init__(kernel, plan, loop, staged, space, names)
        self.cur, self.nexts, self.layout = cur, nexts, layout

    def reads(self, at: str, step: str, buffer: str) -> list[str]:
        if self.layout is None:
            return super().reads(at, step, buffer)
        return self.layout.reads(at, step, buffer, self.staged, self.kk)

    def around(self, depth: str, step: str, hoisted: list[Hoisted]
               ) -> tuple[list[str], list[str], str]:
        start, op, bound = self.bounds()
        inner = depth + step
        out = [f"{depth}reg {s.hoisted.element}[{self._count(s)}] {r};"
               for s, r in zip(self.staged, self.nexts, strict=True)]
        out += [f"{depth}// the first phase's operands, into registers (addresses clamped "
                "inside the arrays)",
                f"{depth}if ({start} {op} {bound}) {{"]
        for s, r in zip(self.staged, self.nexts, strict=True):
            out += self._load(s, r, inner, step, start)
        phase = self.k0 if start == "0" else f"({self.k0} - ({start}))"
        out += [f"{depth}}}",
                f"{depth}for (int {self.k0} = {start}; {self.k0} {op} {bound}; "
                f"{self.k0} += {self.tile_k}) {{",
                f"{inner}int {self.cur} = {phase} / {self.tile_k} % 2;",
                f"{inner}// the phase's operands into its buffer, zeros past the loop's "
                "end; the buffer's",
                f"{inner}// readers two phases back have all passed the previous phase's "
                "barrier"]
        for s, r in zip(self.staged, self.nexts, strict=True):
            out += self._store(s, r, inner, step)
        out += [f"{inner}barrier({self.space});",
                f"{inner}// the next phase's operands: loads nothing waits for (no test, "
                "addresses",
                f"{inner}// clamped inside the arrays), in flight during the compute "
                "below"]
        for s, r in zip(self.staged, self.nexts, strict=True):
            out += self._load(s, r, inner, step, f"{self.k0} + {self.tile_k}")
        out += self.reads(inner, step, f"[{self.cur}]")
        return out, [f"{inner}}}", f"{depth}}}"], inner + step

    def _count(self, s: Staged) -> str:
        """The elements of the tile of `s` each thread loads per phase."""
        return f"{' * '.join(s.dims)} / ({threads_text(self.kernel, self.plan)})"

    def _element(self, s: Staged) -> tuple[list[str], str]:
        """The tile's indices of the element a thread moves in iteration r (from e) and
        the `int e = ...` line."""
        last = s.dims[-1]
        parts = [f"{self.e} / {last}", f"{self.e} % {last}"] if len(s.dims) == 2 \
            else [self.e]
        threads = threads_text(self.kernel, self.plan)
        return parts, f"int {self.e} = {self.r} * ({threads}) + {self.plan.names.unit};"

    def _load(self, s: Staged, register: str, at: str, step: str, phase: str
              ) -> list[str]:
        """The loop that loads the thread's elements of the tile of `s` of the phase
        starting at `phase` into `register`, each index clamped inside its array."""
        plan, kernel, k = self.plan, self.kernel, self.loop.var
        n = plan.names
        _, op, bound = self.bounds()
        parts, e_line = self._element(s)
        base = (f"{plan.row.foreach.var} * {n.tile_i}" if s.hoisted.kind == "i"
                else f"{plan.shape.blocks.var} * {n.tile_j}")
        own = text_of(kernel, plan.row.bound if s.hoisted.kind == "i" else plan.shape.bound)
        last_k = bound if op == "<=" else _minus_one(bound)
        decls = [f"int {x} = min({_plus(phase, part)}, {last_k});"
                 if x == k else f"int {x} = min({_plus(base, part)}, {_minus_one(own)});"
                 for x, part in zip(index_names(s.access), parts, strict=True)]
        inner = at + step
        return [f"{at}for (int {self.r} = 0; {self.r} < {self._count(s)}; {self.r}++) {{",
                f"{inner}{e_line}", *(inner + d for d in decls),
                f"{inner}{register}[{self.r}] = {s.hoisted.text};",
                f"{at}}}"]

    def _store(self, s: Staged, register: str, at: str, step: str) -> list[str]:
        """The loop that stores the registers into the phase's buffer of the tile of
        `s`: zeros for the iterations past the loop's end (only they are not products
        of the original's operands)."""
        k = self.loop.var
        _, op, bound = self.bounds()
        parts, e_line = self._element(s)
        part_of_k = parts[index_names(s.access).index(k)]
        at_tile = f"{s.array}[{self.cur}]" + (
            self.layout.at_tile(s, parts) if self.layout else "".join(f"[{p}]" for p in parts))
        inner, deeper = at + step, at + step * 2
        return [f"{at}for (int {self.r} = 0; {self.r} < {self._count(s)}; {self.r}++) {{",
                f"{inner}{e_line}",
                f"{inner}if ({self.k0} + {part_of_k} {op} {bound}) {{",
                f"{deeper}{at_tile} = {register}[{self.r}];",
                f"{inner}}} else {{",
                f"{deeper}{at_tile} = {zero_of(s.hoisted.element)};",
                f"{inner}}}",
                f"{at}}}"]


def _minus_one(bound: str) -> str:
    return f"{bound} - 1" if bound.isidentifier() or bound.isdigit() else f"({bound}) - 1"


def _plus(base: str, part: str) -> str:
    return part if base == "0" else f"{base} + {part}"
