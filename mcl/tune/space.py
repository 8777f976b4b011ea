"""The search space of `mcl tune`: a kernel's named constants, the values to try, and the
rules a configuration must satisfy (in the manner of Tangram's `__tunable` knobs with
their constraints, docs/tuning.md).

Values come from the kernel, in the comment block directly above a constant:

    // Steps of k per phase.
    // tune: 4, 8, 16
    const int TILE_K = 8;

and from the command line (`--param TILE_K=8,16`, which wins). Rules are MCPL boolean
expressions over the constants, one per `// require:` line anywhere in those comments,
(`// require: TILE_I % THREADS_I == 0`), evaluated with C's integer arithmetic.
The description adds its own (`description_problems`): work-items per work-group within
the par_groups' limits, local memory within what one block may have of the memory that
holds it (its capacity less what the leaf reserves per block, mcl.tune.leaf_limits), and
the estimated registers of a work-group within the register file.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.codegen.host_eval import Number, evaluate
from mcl.diagnostics import MclError, Span, error
from mcl.mcpl.ast import ArrayType, Decl, Expr, Foreach, Module, Name, walk

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription

_TUNE = re.compile(r"^\s*//\s*tune:\s*(.+?)\s*$")
_REQUIRE = re.compile(r"^\s*//\s*require:\s*(.+?)\s*$")
MAX_CONFIGURATIONS = 100_000


@dataclass(frozen=True)
class Rule:
    text: str
    expr: Expr
    span: Span | None


@dataclass
class SearchSpace:
    params: dict[str, list[Number]]  # constant -> values to try
    rules: list[Rule] = field(default_factory=list)

    def configurations(self) -> list[dict[str, Number]]:
        names = list(self.params)
        total = 1
        for v in self.params.values():
            total *= len(v)
        if total > MAX_CONFIGURATIONS:
            raise MclError(
                error(
                    "tune-space",
                    f"the search space has {total} configurations (at most "
                    f"{MAX_CONFIGURATIONS}); give fewer values with --param",
                )
            )
        return [
            dict(zip(names, combo, strict=True))
            for combo in itertools.product(*self.params.values())
        ]


def constant_values(
    module_constants: tuple[Decl, ...] | list[Decl], config: Mapping[str, Number]
) -> dict[str, Number]:
    """Every named constant's value with `config` applied (derived constants follow)."""
    values: dict[str, Number] = {}
    for c in module_constants:
        if c.name in config:
            values[c.name] = config[c.name]
        elif c.init is not None:
            try:
                values[c.name] = evaluate(c.init, values)
            except MclError:
                pass
    return values


def rule_problems(space: SearchSpace, values: Mapping[str, Number]) -> list[str]:
    problems = []
    for rule in space.rules:
        try:
            ok = evaluate(rule.expr, dict(values))
        except (MclError, ArithmeticError):
            ok = False
        if not ok:
            problems.append(f"breaks `{rule.text}`")
    return problems


def _parse_expr(text: str, span: Span | None) -> Expr:
    from mcl.mcpl.parse import parse_source

    try:
        module = parse_source(f"const bool MCL_RULE = {text};\n", "<require>")
    except MclError as exc:
        raise MclError(
            error(
                "tune-rule",
                f"cannot read the rule `{text}` as an MCPL expression",
                span,
                hint="write it as a condition over named constants, e.g. `TILE_I % THREADS_I == 0`",
            )
        ) from exc
    init = module.constants[0].init
    assert init is not None
    return init


def _number(text: str) -> Number:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_values(text: str, what: str, span: Span | None = None) -> list[Number]:
    try:
        values = [_number(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values:
        raise MclError(
            error(
                "tune-values", f"{what}: expected numbers separated by commas, got '{text}'", span
            )
        )
    return values


def space_from_source(
    module: Module, path: Path, cli_params: Mapping[str, list[Number]], text: str | None = None
) -> SearchSpace:
    """The annotated values and rules of `module`'s constants, with `cli_params` on top
    (`text`: the file's text where it is not the file on disk, as a refined version's)."""
    if text is None:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = text.splitlines()
    params: dict[str, list[Number]] = {}
    rules: list[Rule] = []
    names = {c.name for c in module.constants}
    for c in module.constants:
        if c.span is None or not lines:
            continue
        k = c.span.line - 2  # the comment block directly above
        while k >= 0 and lines[k].lstrip().startswith("//"):
            span = Span.point(str(path), k + 1, 1)
            if m := _TUNE.match(lines[k]):
                params[c.name] = parse_values(m.group(1), f"tune values of {c.name}", span)
            elif m := _REQUIRE.match(lines[k]):
                rules.append(Rule(m.group(1), _parse_expr(m.group(1), span), span))
            k -= 1
    for name, values in cli_params.items():
        if name not in names:
            raise MclError(
                error(
                    "tune-unknown-constant",
                    f"--param {name}: the kernel has no top-level constant '{name}'",
                    hint="named constants: " + ", ".join(sorted(names)),
                )
            )
        params[name] = values
    for rule in rules:
        for n in walk(rule.expr):
            if isinstance(n, Name) and n.name not in names:
                raise MclError(
                    error(
                        "tune-rule",
                        f"the rule `{rule.text}` names '{n.name}', which is not a named constant",
                        rule.span,
                    )
                )
    # Dedupe rules stated twice (a comment block shared by two constants).
    seen: set[tuple[str, int | None]] = set()
    unique = []
    for r in rules:
        key = (r.text, r.span.line if r.span else None)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return SearchSpace(params, unique)


# ----------------------------------------------------------------------------- description


def _bytes_of(element: Any) -> int:
    return 8 if getattr(element, "name", "") in ("double",) else 4


def description_problems(
    generated: Any, hwd: HardwareDescription, mapping: Any, env: Mapping[str, Number], function: str
) -> list[str]:
    """Why the description rules a configuration out: the generated kernels' work-group
    sizes, local memory and estimated registers (evaluated with the constants and sizes
    in `env`) against the limits of description `hwd`."""
    from mcl.codegen.layout import flat_dims
    from mcl.tune.leaf_limits import local_memory_problem

    plan = generated.function(function)
    if plan is None:
        return []
    problems: list[str] = []
    threads_limit = 1
    limited = False
    for g in hwd.par_groups():
        entry = mapping.par_groups.get(g.name)
        if entry is not None and entry.role == "work-item":
            count = g.nr_units if g.nr_units is not None else g.max_nr_units
            if count is not None:
                threads_limit *= int(count)
                limited = True
    local_capacity = None
    register_words = None
    local_spaces = {n for n, s in mapping.spaces.items() if s.address_space == "local"}
    private_spaces = {n for n, s in mapping.spaces.items() if s.address_space == "private"}
    for m in hwd.memories():
        if m.capacity is None:
            continue
        if m.addressable and set(m.spaces) & local_spaces:
            local_capacity = int(m.capacity)
        if not m.addressable and set(m.spaces) & private_spaces:
            register_words = int(m.capacity) // 4
    function_ast = plan.function
    local_bytes = 0
    private_words = 0
    for node in walk(function_ast):
        if not isinstance(node, Decl) or not isinstance(node.type, ArrayType):
            continue
        try:
            count = math.prod(int(evaluate(d, dict(env))) for d in flat_dims(node.type))
        except MclError:
            continue
        space = node.spaces[0] if node.spaces else None
        if space in local_spaces:
            local_bytes += count * _bytes_of(node.type.element)
        elif space in private_spaces and _inside_foreach(function_ast, node):
            private_words += count * _bytes_of(node.type.element) // 4
    for k in plan.kernels:
        try:
            threads = 1
            for s in k.local:
                threads *= int(evaluate(s, dict(env)))
        except MclError:
            continue
        if limited and threads > threads_limit:
            problems.append(
                f"{threads} work-items per work-group; {hwd.name} allows {threads_limit}"
            )
        # On a GPU a work-group whose registers exceed the register file cannot start; on
        # a CPU private arrays beyond the registers live on the stack (in cache).
        gpu = mapping.device_type == "gpu"
        if gpu and register_words is not None and private_words * threads > register_words:
            problems.append(
                f"about {private_words} registers per work-item x {threads} work-items; "
                f"the register file of {hwd.name} holds {register_words}"
            )
    if local_capacity is not None and (
            beyond := local_memory_problem(hwd, local_bytes, local_capacity)):
        problems.append(beyond)
    return problems


def _inside_foreach(function: Any, decl: Decl) -> bool:
    return any(
        isinstance(f, Foreach) and any(n is decl for n in walk(f.body)) for f in walk(function)
    )
