"""A fixed grid of units that walks a foreach's elements: the foreach over `count`
units becomes one over a named constant NR of them, and the body of the innermost
foreach around the work runs in `for (int i = u; i < count; i += NR)`, unit u taking the
elements u, u + NR, ... (paper section 7: the histogram's gpu (v1), a fixed grid of
blocks that walks the image's rows). In every iteration consecutive units still take
consecutive elements, as with several-elements (mcl.refine.several_elements), whose
preconditions this form shares.

Why a constant stride, where several-elements makes a for-loop of F iterations each
guarded by `if (i < count)`: a load in a guarded iteration stands behind its own branch,
so the compiler cannot issue the next iteration's load before this one's value is used
(a histogram's atomic update of the loaded bin waits for each load in turn: one load in
flight per thread). A loop bounded by the count with a stride the compiler knows it
unrolls with a remainder, and issues the unrolled iterations' loads together before
their uses (NVRTC for sm_90: four loads, then four updates), as gpu (v1)'s column loop
of stride NR_THREADS. With a stride read at run time (a count of units computed from
the sizes) it unrolls nothing."""

from __future__ import annotations

from mcl.refine.edits import TextEdit
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import every_name, fresh_name
from mcl.refine.refinement import Refused
from mcl.refine.several_elements import (
    body_indent,
    count_text,
    merged_loop,
    new_header,
    unit_name,
)


def grid_walk(kernel: KernelAtLevel, line: int, units: int) -> tuple[TextEdit, ...]:
    """The edits that make the foreach at `line` a grid of `units` units walking its
    elements (`Refused` where several-elements' preconditions fail)."""
    if units < 1:
        raise Refused(f"units={units}: at least one unit")
    merged, inner, lines, barriers = merged_loop(kernel, line)
    function = kernel.source_function
    assert function.span is not None and inner.body.span is not None
    unit = unit_name(kernel, merged)
    taken = every_name(function) | {c.name for c in kernel.constants()} \
        | {f.name for f in kernel.source.program.main.functions}
    grid = fresh_name(f"NR_{unit.upper()}", taken)
    count = count_text(kernel, merged.count)
    var = merged.var
    constant = TextEdit.inserting(function.span.line, 1, "\n".join([
        f"// Units of foreach {unit}: a fixed grid that walks the {count} elements of "
        f"foreach {var},",
        f"// unit {unit} the elements {unit}, {unit} + {grid}, ... (a constant stride: "
        "the compiler unrolls the walk",
        "// and issues the loads of several elements before their uses).",
        f"const int {grid} = {units};",
        "", ""]))
    indent, step = body_indent(kernel, inner, lines)
    out = [f"{indent}for (int {var} = {unit}; {var} < {count}; {var} += {grid}) {{"]
    out += [(step + x) if x.strip() else x for x in lines]
    if barriers:
        out.append(f"{indent}{step}// every unit is done with this element before the next")
    out += [f"{indent}{step}barrier({space});" for space in barriers]
    out.append(f"{indent}}}")
    span = inner.body.span
    body = TextEdit(span.line + 1, 1, span.end_line, 1, "\n".join(out) + "\n")
    return constant, new_header(kernel, merged, grid), body
