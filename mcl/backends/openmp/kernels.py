"""One C function per top-level foreach nest of a leaf-level MCPL function (the OpenMP
backend's counterpart of mcl/codegen/kernels.py, whose levels, NDRange and declarations
it reuses).

The nest `foreach (t in nt threads) { foreach (v in 16 vectors) { BODY } }` with
x86_avx512's mapping (threads: work-groups, vectors: work-items) becomes

    void f(ARGS, const int mcl_groups0, const int mcl_local0)
    {
        const long mcl_nr_groups = (long)mcl_groups0;
        #pragma omp parallel for schedule(dynamic, 1)
        for (long mcl_g = 0; mcl_g < mcl_nr_groups; mcl_g++) {
            const int mcl_group0 = (int)(mcl_g % mcl_groups0);
            (memory shared by the group's work-items)
            {
                #pragma omp simd
                for (int mcl_item0 = 0; mcl_item0 < 16; mcl_item0++) {
                    const int t = mcl_group0;
                    const int v = mcl_item0;
                    BODY
                }
            }
        }
    }

Work-groups are independent (OpenCL's model, which the MCPL checker's barrier rules
follow), so they are the iterations of one parallel loop, handed out one at a time in
order of their linear number as each thread becomes free, as PoCL hands out work-groups
(consecutive groups share what they read; a thread the shared machine slows down takes
fewer: in alternating runs of matmul x86_avx512_v4 at 1024 on the shared 2-core test
machine, as fast as `schedule(static)` or slightly faster).
The work-items of a group run as a loop; without a barrier between them they are
independent as well (`omp simd`). A barrier at the top level of the work-items' body
ends one such loop and starts the next (every work-item has then run up to it); a
barrier inside a loop or branch, or a private value of a work-item used across a
barrier, is refused. Where the mapping makes the innermost par_group the components of
vectors (lanes.py), a group has one work-item and no loop: its body is vector code.
A `return` ends the work-item: a jump to the end of its iteration.
"""

from __future__ import annotations

from dataclasses import replace

from mcl.backends.openmp.dialect import (
    group_index,
    groups_argument,
    item_index,
    local_argument,
)
from mcl.backends.openmp.lanes import CLaneEmitter
from mcl.codegen.ctree import (
    INDENT,
    CodeLine,
    Compound,
    Directive,
    ForLoop,
    FunctionDef,
    Leaf,
    Node,
    Pragma,
    ReturnLine,
    rewrite,
)
from mcl.codegen.host_eval import static_int
from mcl.codegen.kernels import KernelEmitter, NDRange, NDRangeLevel, _stmts, size_macros
from mcl.codegen.plan import KernelPlan
from mcl.codegen.statements import contains_barrier
from mcl.diagnostics import MclError, error
from mcl.mcpl.ast import (
    BINARY_PRECEDENCE,
    Barrier,
    Decl,
    Expr,
    Foreach,
    Name,
    Stmt,
    ViewDecl,
    walk,
)


def end_label(segment: int) -> str:
    """The label at the end of a work-item's iteration of loop `segment` (C labels have
    function scope: one per loop)."""
    return f"mcl_next{segment}"


def barrier_segments(work: Stmt) -> list[tuple[Stmt, ...]]:
    """The statements of the work-items' body between its top-level barriers; an error
    for a barrier anywhere else or a private value used across one."""
    segments: list[list[Stmt]] = [[]]
    barriers: list[Barrier] = []
    for s in _stmts(work):
        if isinstance(s, Barrier):
            segments.append([])
            barriers.append(s)
            continue
        if contains_barrier(s):
            inner = next(n for n in walk(s) if isinstance(n, Barrier))
            raise MclError(error(
                "codegen-openmp-barrier",
                f"this barrier stands inside a {type(s).__name__.lower()} statement; the "
                "OpenMP backend runs the work-items of a group as loops from one barrier "
                "to the next, so it supports barriers only at the top level of the "
                "work-items' body", inner.span,
                hint="move the barrier out of the statement, or generate OpenCL "
                "(--backend opencl)"))
        segments[-1].append(s)
    for k, segment in enumerate(segments[:-1]):
        declared = {name for s in segment for name in _declared_names(s)}
        span = barriers[k].span
        at = f" at line {span.line}" if span is not None else ""
        for later in segments[k + 1:]:
            for n in (n for s in later for n in walk(s)):
                if isinstance(n, Name) and n.name in declared:
                    raise MclError(error(
                        "codegen-openmp-barrier",
                        f"'{n.name}' is declared before the barrier{at} and used after it; "
                        "the OpenMP backend runs the work-items of a group as one loop "
                        "per stretch between barriers and keeps no private value of a "
                        "work-item from one loop to the next", n.span,
                        hint="keep the value in memory shared by the group (an array with "
                        "one element per work-item), or generate OpenCL (--backend opencl)"))
    return [tuple(s) for s in segments]


def _declared_names(s: Stmt) -> list[str]:
    """The names a statement of the work-items' body declares for the statements after it."""
    if isinstance(s, ViewDecl):
        return [s.view.name]
    if isinstance(s, Decl):
        return [s.name] + ([s.view.name] if s.view is not None else [])
    return []


class OpenMPKernelEmitter(KernelEmitter):
    """Emits the C function of one top-level foreach nest."""

    def _emit(
        self, name: str, top: Foreach, levels: list[NDRangeLevel], work: Stmt,
        lanes: tuple[NDRangeLevel, int] | None,
    ) -> tuple[FunctionDef, KernelPlan]:
        nd = self._ndrange(levels, lanes)
        segments = [_stmts(work)] if lanes is not None else barrier_segments(work)
        if nd.guards and len(segments) > 1:
            raise MclError(error(
                "codegen-openmp-barrier", "a kernel whose work-items are guarded (role "
                "'global') cannot have barriers in the OpenMP backend", top.span))
        self.body.start()
        segments_out: list[list[Node]] = []
        with self.body.nested():
            replicated: list[Decl | ViewDecl] = []
            with self.body.collecting() as shared:
                dynamic = self._shared_declarations(levels, replicated)
            if dynamic:
                raise MclError(error(
                    "codegen-openmp-local",
                    f"'{dynamic[0].name}' is memory shared by a group whose size the host "
                    "sets; the OpenMP backend declares shared memory in the group's "
                    "iteration and needs its size in constants", top.span))
            for k, segment in enumerate(segments):
                with self.body.collecting() as nodes, self.body.nested():
                    for lv in levels:
                        self._index_declaration(lv, levels)
                    for d in replicated:
                        self.body.stmt(d)
                    if lanes is not None:
                        CLaneEmitter(self.body, lanes[0].foreach, lanes[1]).emit()
                    elif nd.guards:
                        self.body.guarded(segment, self._guard(nd))
                    else:
                        for s in segment:
                            self.body.stmt(s)
                segments_out.append(self._returns_jump(nodes, k))
        signature, args = self._value_parameters(top, nd)
        dims = range(len(nd.groups))
        signature += [f"const int {groups_argument(d)}" for d in dims]
        signature += [f"const int {local_argument(d)}" for d in dims]
        defines = tuple(self.body.specialised)
        header = self.mapping.dialect.kernel_head("", name)
        header += ",\n".join(f"{INDENT}{s}" for s in signature) + ")"
        kernel = FunctionDef(self.function.name, top.span, header,
                             self._function_body(nd.local, shared, segments_out),
                             size_macros(defines))
        plan = KernelPlan(
            name, self.function.name, tuple(args), nd.groups, nd.local, top.span, defines
        )
        return kernel, plan

    # ------------------------------------------------------------------ parts
    def _guard(self, nd: NDRange) -> str:
        return " && ".join(
            f"{self.mapping.dialect.unit_index('global', d)} < "
            f"{self.printer.wrap(total, BINARY_PRECEDENCE['<'] + 1)}"
            for d, total in nd.guards
        )

    @staticmethod
    def _returns_jump(nodes: list[Node], segment: int) -> list[Node]:
        """A `return` of the work-item jumps to the end of its iteration."""
        jumps = False

        def jump(node: Leaf) -> Leaf:
            nonlocal jumps
            if not isinstance(node, ReturnLine):
                return node
            jumps = True
            return CodeLine(f"goto {end_label(segment)};", node.span, node.note, node.comment)

        out = rewrite(nodes, jump)
        return [*out, CodeLine(f"{end_label(segment)}: ;")] if jumps else out

    def _local_bound(self, size: Expr, dim: int) -> str:
        """The trip count of the work-items' loop along `dim`: the size itself when it is
        made of constants (the C compiler then knows it), else the kernel argument."""
        if self._is_constant([size]):
            return self.printer.wrap(size, BINARY_PRECEDENCE["<"] + 1)
        return local_argument(dim)

    def _function_body(self, local: tuple[Expr, ...], shared: list[Node],
                       segments: list[list[Node]]) -> list[Node]:
        """The loop over the work-groups around the group's shared memory and, per
        segment between barriers, the loops over its work-items around the segment."""
        dims = range(len(local))
        total = " * ".join(f"(long){groups_argument(d)}" for d in dims) or "1L"
        groups: list[Node] = []
        stride = ""
        for d in dims:
            groups.append(CodeLine(f"const int {group_index(d)} = (int)(mcl_g{stride} % "
                               f"{groups_argument(d)});"))
            stride += f" / {groups_argument(d)}"
        groups += shared
        single = all(static_int(s, {}) == 1 for s in local)
        # The level of a segment's statements; its preprocessor lines (the lanes' guard)
        # stand one level left of them, where this backend has always printed them.
        level = 3 + (0 if single else len(local))

        def shifted(node: Leaf) -> Leaf:
            return replace(node, indent=level - 1) if isinstance(node, Directive) else node

        for segment in segments:
            items = rewrite(segment, shifted)
            if single:
                items = [*(CodeLine(f"const int {item_index(d)} = 0;") for d in dims), *items]
            else:
                for d in dims:  # dimension 0 innermost: consecutive work-items
                    v, bound = item_index(d), self._local_bound(local[d], d)
                    loop = ForLoop([(CodeLine(f"for (int {v} = 0; {v} < {bound}; {v}++) {{"),
                                     items)])
                    items = [Pragma("omp simd"), loop] if d == 0 else [loop]
            groups.append(Compound([(CodeLine("{"), items)]))
        return [
            CodeLine(f"const long mcl_nr_groups = {total};"),
            Pragma("omp parallel for schedule(dynamic, 1)"),
            ForLoop([(CodeLine("for (long mcl_g = 0; mcl_g < mcl_nr_groups; mcl_g++) {"), groups)]),
        ]
