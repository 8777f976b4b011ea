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

import re

from mcl.backends.openmp.dialect import (
    group_index,
    groups_argument,
    item_index,
    local_argument,
)
from mcl.backends.openmp.lanes import CLaneEmitter
from mcl.codegen.host_eval import static_int
from mcl.codegen.kernels import KernelEmitter, Level, NDRange, _mcpl, _stmts
from mcl.codegen.plan import KernelPlan
from mcl.codegen.statements import INDENT, contains_barrier, where
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

_RETURN = re.compile(r"^(\s*)return;")


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
        self, name: str, top: Foreach, levels: list[Level], work: Stmt,
        lanes: tuple[Level, int] | None,
    ) -> tuple[str, KernelPlan]:
        nd = self._ndrange(levels, lanes)
        segments = [_stmts(work)] if lanes is not None else barrier_segments(work)
        if nd.guards and len(segments) > 1:
            raise MclError(error(
                "codegen-openmp-barrier", "a kernel whose work-items are guarded (role "
                "'global') cannot have barriers in the OpenMP backend", top.span))
        lines = self.body.lines = []
        self.body.specialised = []
        texts: list[list[str]] = []
        with self.body.nested():
            replicated: list[Decl | ViewDecl] = []
            dynamic = self._shared_declarations(levels, replicated)
            if dynamic:
                raise MclError(error(
                    "codegen-openmp-local",
                    f"'{dynamic[0].name}' is memory shared by a group whose size the host "
                    "sets; the OpenMP backend declares shared memory in the group's "
                    "iteration and needs its size in constants", top.span))
            shared = list(lines)
            for k, segment in enumerate(segments):
                lines.clear()
                with self.body.nested():
                    for lv in levels:
                        self._index_declaration(lv, levels)
                    for d in replicated:
                        self.body.stmt(d, 1)
                    if lanes is not None:
                        CLaneEmitter(self.body, lanes[0].foreach, lanes[1]).emit(1)
                    elif nd.guards:
                        self.body.guarded(segment, self._guard(nd), 1)
                    else:
                        for s in segment:
                            self.body.stmt(s, 1)
                texts.append(self._returns_jump(list(lines), k))
        signature, args = self._value_parameters(top, nd)
        dims = range(len(nd.groups))
        signature += [f"const int {groups_argument(d)}" for d in dims]
        signature += [f"const int {local_argument(d)}" for d in dims]
        defines = tuple(self.body.specialised)
        text = f"// {self.function.name}{where(top.span).replace('  //', ',')}\n"
        for macro, size in defines:
            text += (
                f"#ifndef {macro}\n#define {macro} 1  // = {_mcpl(size)}, set with "
                f"-D {macro}=... when the kernel is built\n#endif\n"
            )
        text += self.mapping.dialect.kernel_head("", name)
        text += ",\n".join(f"{INDENT}{s}" for s in signature) + ")\n{\n"
        text += "\n".join(self._function_body(nd.local, shared, texts)) + "\n}\n"
        plan = KernelPlan(
            name, self.function.name, tuple(args), nd.groups, nd.local, top.span, defines
        )
        return text, plan

    # ------------------------------------------------------------------ parts
    def _guard(self, nd: NDRange) -> str:
        return " && ".join(
            f"{self.mapping.dialect.unit_index('global', d)} < "
            f"{self.printer.wrap(total, BINARY_PRECEDENCE['<'] + 1)}"
            for d, total in nd.guards
        )

    @staticmethod
    def _returns_jump(lines: list[str], segment: int) -> list[str]:
        """A `return` of the work-item jumps to the end of its iteration."""
        out = [_RETURN.sub(rf"\1goto {end_label(segment)};", line) for line in lines]
        if out != lines:
            out.append(f"{INDENT}{end_label(segment)}: ;")
        return out

    def _local_bound(self, size: Expr, dim: int) -> str:
        """The trip count of the work-items' loop along `dim`: the size itself when it is
        made of constants (the C compiler then knows it), else the kernel argument."""
        if self._is_constant([size]):
            return self.printer.wrap(size, BINARY_PRECEDENCE["<"] + 1)
        return local_argument(dim)

    def _function_body(self, local: tuple[Expr, ...], shared: list[str],
                       segments: list[list[str]]) -> list[str]:
        dims = range(len(local))
        out = []
        total = " * ".join(f"(long){groups_argument(d)}" for d in dims) or "1L"
        out.append(f"{INDENT}const long mcl_nr_groups = {total};")
        out.append(f"{INDENT}#pragma omp parallel for schedule(dynamic, 1)")
        out.append(f"{INDENT}for (long mcl_g = 0; mcl_g < mcl_nr_groups; mcl_g++) {{")
        inner = INDENT * 2
        stride = ""
        for d in dims:
            out.append(f"{inner}const int {group_index(d)} = (int)(mcl_g{stride} % "
                       f"{groups_argument(d)});")
            stride += f" / {groups_argument(d)}"
        out += [INDENT + line for line in shared]
        single = all(static_int(s, {}) == 1 for s in local)
        for segment in segments:
            out.append(f"{inner}{{")
            depth = 3  # the level of the work-item's statements
            if single:
                out += [f"{INDENT * depth}const int {item_index(d)} = 0;" for d in dims]
            else:
                for d in reversed(dims):  # dimension 0 innermost: consecutive work-items
                    if d == 0:
                        out.append(f"{INDENT * depth}#pragma omp simd")
                    bound = self._local_bound(local[d], d)
                    v = item_index(d)
                    out.append(f"{INDENT * depth}for (int {v} = 0; {v} < {bound}; {v}++) {{")
                    depth += 1
            out += [INDENT * (depth - 1) + line for line in segment]
            out += [f"{INDENT * level}}}" for level in range(depth - 1, 2, -1)]
            out.append(f"{inner}}}")
        out.append(f"{INDENT}}}")
        return out

