"""Reference resolution and expression evaluation (hdl.md §3.1).

A reference statement (`mem;`, `perfect.hierarchy.threads;`) is replaced by the block it
names; qualified names walk `DESC.BLOCK.BLOCK...` through *resolved* blocks, so a name
may pass through blocks that were themselves brought in by reference. Expressions are
evaluated and units normalised (mcl.hdl.units). The result per description is a tree of
`RBlock`s with no reference statements left; `mcl.hdl.build` turns it into the model.

Problems are collected as diagnostics (never raised one by one), so a user sees all of
them at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import NoReturn, Union, cast

from mcl.diagnostics import Diagnostic, Span, did_you_mean, error
from mcl.hdl.model import Quantity
from mcl.hdl.syntax import (
    ARGUMENT_PROPERTIES,
    FLAG_PROPERTIES,
    VALUED_PROPERTIES,
    ArgStmt,
    BinOp,
    BlockStmt,
    Expr,
    FlagStmt,
    HdlFile,
    Number,
    OpLiteral,
    QualName,
    RefStmt,
    String,
    UnitExpr,
    ValuedStmt,
    Word,
)
from mcl.hdl.units import PROPERTY_DIMENSION, UnitError, default_unit, parse_unit

# Numbers of units, banks and bytes per line: whole, at least one (the analyses divide by
# them: units per group, the bank of an address, the lines of a footprint).
_COUNTS = frozenset({"nr_units", "max_nr_units", "nr_banks", "cache_line_size"})
# Rates the time of every transfer divides by: more than zero.
_RATES = frozenset({"bandwidth"})

PROPERTY_NAMES = set(FLAG_PROPERTIES) | set(VALUED_PROPERTIES) | set(ARGUMENT_PROPERTIES)

# An evaluated argument: a name (str, '[*]' kept as suffix), a number, a Quantity, a bool,
# a string literal, or an operator literal (str such as '+').
ArgValue = Union[str, int, float, bool, Quantity]


@dataclass(frozen=True)
class Prop:
    """An evaluated property statement."""

    kind: str  # "flag" | "valued" | "arg"
    name: str
    value: object  # flag: True; valued: Quantity | bool; arg: tuple[ArgValue, ...]
    span: Span


@dataclass(frozen=True)
class RBlock:
    """A block with every reference statement replaced and every expression evaluated."""

    kind: str
    name: str
    blocks: tuple[RBlock, ...]
    props: tuple[Prop, ...]
    span: Span
    name_span: Span
    origin: str  # the description whose file defines the block
    via: Span | None = None  # the reference statement that brought it here, if any

    @property
    def where(self) -> Span:
        """Where a problem with this block should be reported in the using file."""
        return self.via or self.name_span

    def child(self, name: str) -> RBlock | None:
        return next((b for b in self.blocks if b.name == name), None)

    def props_named(self, name: str) -> list[Prop]:
        return [p for p in self.props if p.name == name]


@dataclass
class Resolver:
    """Resolves the top-level blocks of a set of parsed descriptions, lazily and once."""

    files: dict[str, HdlFile]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _done: dict[tuple[str, str], RBlock | None] = field(default_factory=dict)
    _busy: set[tuple[str, str]] = field(default_factory=set)

    # ------------------------------------------------------------------ public

    def top_blocks(self, desc: str) -> list[RBlock]:
        """All top-level blocks of `desc`, resolved (duplicates reported, first one kept)."""
        seen: dict[str, BlockStmt] = {}
        out = []
        for block in self.files[desc].blocks:
            if block.name in seen:
                self._error(
                    "hdl-duplicate-block",
                    f"two blocks named '{block.name}' at the top level of '{desc}'",
                    block.name_span,
                    f"the first is at line {seen[block.name].name_span.line}; rename one",
                )
                continue
            seen[block.name] = block
            resolved = self.top_block(desc, block.name)
            if resolved is not None:
                out.append(resolved)
        return out

    def top_block(self, desc: str, name: str) -> RBlock | None:
        key = (desc, name)
        if key in self._done:
            return self._done[key]
        block = next((b for b in self.files[desc].blocks if b.name == name), None)
        if block is None:
            return None
        if key in self._busy:
            return None  # reported by the reference that closed the cycle
        self._busy.add(key)
        try:
            result = self._resolve_block(desc, block)
        finally:
            self._busy.discard(key)
        self._done[key] = result
        return result

    # ------------------------------------------------------------------ blocks

    def _resolve_block(self, desc: str, block: BlockStmt) -> RBlock:
        blocks: list[RBlock] = []
        props: list[Prop] = []
        for stmt in block.body:
            match stmt:
                case BlockStmt():
                    blocks.append(self._resolve_block(desc, stmt))
                case RefStmt():
                    target = self._reference(desc, stmt.name)
                    if isinstance(target, RBlock):
                        blocks.append(replace(target, via=stmt.span))
                    elif isinstance(target, Prop):
                        props.append(replace(target, span=stmt.span))
                case FlagStmt():
                    props.append(Prop("flag", stmt.name, True, stmt.span))
                case ValuedStmt():
                    value = self._valued(desc, stmt)
                    if value is not None:
                        props.append(Prop("valued", stmt.name, value, stmt.span))
                case ArgStmt():
                    args = tuple(self._argument(desc, a) for a in stmt.args)
                    if all(a is not None for a in args):
                        props.append(Prop("arg", stmt.name, args, stmt.span))
                case _:  # mypy proves every statement kind has an arm
                    _no_rule(stmt)
        self._check_unique(block, blocks, props)
        return RBlock(block.kind, block.name, tuple(blocks), tuple(props), block.span,
                      block.name_span, desc)

    def _check_unique(self, block: BlockStmt, blocks: list[RBlock], props: list[Prop]) -> None:
        seen: dict[str, RBlock] = {}
        for b in blocks:
            if b.name in seen:
                self._error(
                    "hdl-duplicate-block",
                    f"two blocks named '{b.name}' in {block.kind} '{block.name}'",
                    b.where,
                    f"the first is at line {seen[b.name].where.line};"
                    " names in one scope must differ",
                )
            else:
                seen[b.name] = b
        valued: dict[str, Prop] = {}
        for p in props:
            if p.kind != "valued":
                continue
            if p.name in valued:
                self._error(
                    "hdl-duplicate-property",
                    f"property '{p.name}' is stated twice in {block.kind} '{block.name}'",
                    p.span,
                    f"the first is at line {valued[p.name].span.line}",
                )
            else:
                valued[p.name] = p

    # ------------------------------------------------------------------ names

    def _reference(self, desc: str, name: QualName) -> RBlock | Prop | None:
        if name.star:
            self._error("hdl-bad-reference", f"'{name}': '[*]' is only allowed in connects(...)",
                        name.span)
            return None
        return self.walk(desc, name)

    def walk(self, desc: str, name: QualName) -> RBlock | Prop | None:
        """Follow a (qualified) name from description `desc`; report and return None when it
        names nothing. `DESC.BLOCK...` when the first part is a description (and more parts
        follow); otherwise a top-level block of `desc` itself."""
        parts = name.parts
        target, rest = desc, parts
        if len(parts) > 1 and parts[0] in self.files:
            target, rest = parts[0], parts[1:]
        elif len(parts) > 1 and parts[0] not in self._top_names(desc):
            self._unknown(name, parts[0], sorted(self.files) + self._top_names(desc),
                          "description or block")
            return None
        head = self.top_block(target, rest[0])
        if head is None:
            if (target, rest[0]) in self._busy:
                self._error("hdl-cyclic-reference",
                            f"cyclic reference: '{name}' refers to a block that contains it",
                            name.span)
            else:
                where = f"at the top level of '{target}'"
                self._unknown(name, rest[0], self._top_names(target), f"block {where}")
            return None
        node: RBlock = head
        for i, part in enumerate(rest[1:], start=2):
            child = node.child(part)
            if child is not None:
                node = child
                continue
            last = i == len(rest)
            if last and part in PROPERTY_NAMES:
                found = node.props_named(part)
                if found:
                    return found[0]
                self._error("hdl-unknown-reference",
                            f"'{name}': {node.kind} '{node.name}' has no property '{part}'",
                            name.span)
                return None
            self._unknown(name, part, [b.name for b in node.blocks],
                          f"block in {node.kind} '{node.name}'")
            return None
        return node

    def _top_names(self, desc: str) -> list[str]:
        return [b.name for b in self.files[desc].blocks]

    def _unknown(self, name: QualName, part: str, candidates: list[str], what: str) -> None:
        self._error("hdl-unknown-reference",
                    f"unknown reference '{name}': no {what} named '{part}'",
                    name.span, did_you_mean(part, candidates))

    # ------------------------------------------------------------------ values

    def _valued(self, desc: str, stmt: ValuedStmt) -> Quantity | bool | None:
        value = self._evaluate(desc, stmt.value.expr)
        if value is None:
            return None
        if stmt.name == "addressable":
            if not isinstance(value, bool):
                self._error("hdl-bad-value", "addressable must be true or false", stmt.value.span)
                return None
            return value
        number = value.value if isinstance(value, Quantity) else value
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            self._error("hdl-bad-value", f"{stmt.name} must be a number, not {_describe(value)}",
                        stmt.value.span)
            return None
        unit = value.unit if isinstance(value, Quantity) else default_unit(stmt.name)
        if not _bounded(number):
            self._too_large(stmt.name, stmt.value.span)
            return None
        if stmt.value.unit:
            info = self._unit(stmt.value, stmt.name)
            if info is None:
                return None
            dims = PROPERTY_DIMENSION.get(stmt.name)
            if not dims or info.dimension not in dims:
                expected = "no unit" if not dims else " or ".join(dims)
                self._error("hdl-unit-mismatch",
                            f"{stmt.name} takes {expected}, not '{stmt.value.unit}'",
                            stmt.value.unit_span or stmt.value.span)
                return None
            number, unit = _scale(number, info.factor), info.unit
            if not _bounded(number):
                self._too_large(stmt.name, stmt.value.span)
                return None
        if number < 0:
            self._error("hdl-bad-value", f"{stmt.name} cannot be negative", stmt.value.span)
            return None
        if stmt.name in _COUNTS and not math.isinf(number) and (number < 1 or number % 1):
            # A group of 0 or 3.5 units makes every count derived from it (translation's
            # dimension statements, occupancy) meaningless or a division by zero.
            self._error("hdl-bad-value", f"{stmt.name} must be a whole number of at least 1, "
                        f"not {number:g}", stmt.value.span)
            return None
        if stmt.name in _RATES and number == 0:
            self._error("hdl-bad-value", f"{stmt.name} must be more than 0: the time of every "
                        "transfer over it is divided by it", stmt.value.span,
                        "leave the property out where the rate is not known")
            return None
        return Quantity(number, unit)

    def _too_large(self, what: str, span: Span | None) -> None:
        self._error("hdl-bad-value", f"{what} is too large: at most {MAX_VALUE:.0e} is "
                    "accepted", span, "no hardware has more; write `unlimited` if no bound "
                    "is meant")

    def _argument(self, desc: str, arg: UnitExpr) -> ArgValue | None:
        expr = arg.expr
        if isinstance(expr, QualName) and expr.parts[-1] not in PROPERTY_NAMES:
            if arg.unit:  # `space(a b)`: the grammar read `b` as a unit of the name `a`
                self._error("hdl-syntax", f"unexpected '{arg.unit}' after '{expr}'",
                            arg.unit_span or arg.span, "separate arguments with ','")
                return None
            return str(expr)  # a name: slots(block, 8), space(main), connects(mem, cores.core[*])
        if isinstance(expr, OpLiteral):
            return expr.op
        value = self._evaluate(desc, expr)
        if value is None or not arg.unit:
            return value
        info = self._unit(arg, None)
        if info is None:
            return None
        number = value.value if isinstance(value, Quantity) else value
        if isinstance(number, (bool, str)):
            self._error("hdl-bad-value", f"a unit cannot follow {_describe(value)}", arg.span)
            return None
        if not _bounded(number):
            self._too_large("this value", arg.span)
            return None
        return Quantity(_scale(number, info.factor), info.unit)

    def _unit(self, arg: UnitExpr, prop: str | None):
        try:
            return parse_unit(arg.unit or "", prop)
        except UnitError as exc:
            hint = ("did you mean " + " or ".join(f"'{s}'" for s in exc.suggestions) + "?"
                    if exc.suggestions else
                    "units are B, bit, cycles, s, Hz with an optional k, M or G, and X/s rates")
            self._error("hdl-unknown-unit", f"unknown unit '{arg.unit}'",
                        arg.unit_span or arg.span, hint)
            return None

    def _evaluate(self, desc: str, expr: Expr) -> ArgValue | None:
        """Numbers (int, float, math.inf), bools, strings, or Quantities from references."""
        match expr:
            case Number():
                if not _bounded(expr.value):
                    self._too_large("this number", expr.span)
                    return None
                return expr.value
            case Word():
                return {"unlimited": math.inf, "true": True, "false": False}[expr.word]
            case String():
                return expr.value
            case OpLiteral():
                return expr.op
            case QualName():
                return self._value_of(desc, expr)
            case BinOp():
                return self._operation(desc, expr)
            case _:  # mypy proves every expression kind has an arm
                _no_rule(expr)

    def _value_of(self, desc: str, expr: QualName) -> ArgValue | None:
        """The value of the valued property a reference names."""
        if expr.parts[-1] not in VALUED_PROPERTIES:
            self._error("hdl-bad-value",
                        f"'{expr}' is a name, not a value; a value reference ends in a "
                        "property (e.g. 'gpu.hierarchy.blocks.max_nr_units')", expr.span)
            return None
        target = self.walk(desc, expr)
        # a valued property holds a Quantity or a bool (Prop.value)
        return cast(ArgValue, target.value) if isinstance(target, Prop) else None

    def _operation(self, desc: str, expr: BinOp) -> ArgValue | None:
        """`left op right` on numbers (and Quantities: the unit of whichever has one)."""
        left, right = self._evaluate(desc, expr.left), self._evaluate(desc, expr.right)
        if left is None or right is None:
            return None
        lv = left.value if isinstance(left, Quantity) else left
        rv = right.value if isinstance(right, Quantity) else right
        if (isinstance(lv, bool) or isinstance(rv, bool) or not isinstance(lv, (int, float))
                or not isinstance(rv, (int, float))):
            self._error("hdl-bad-value", f"'{expr.op}' needs numbers on both sides", expr.span)
            return None
        result = _arith(expr.op, lv, rv)
        if result is None or (isinstance(result, float) and math.isnan(result)):
            self._error("hdl-bad-value", "this expression has no value (division by zero "
                        "or unlimited minus unlimited)", expr.span)
            return None
        unit = next((v.unit for v in (left, right) if isinstance(v, Quantity) and v.unit), "")
        return Quantity(result, unit) if unit else result

    def _error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(error(code, message, span, hint))


# Every figure a description states (bytes, cycles, Hz, counts) is far below this; larger
# values only overflow the floating-point arithmetic of the analyses (and the float()
# conversion of a huge int), so they are refused where they are read.
MAX_VALUE = 10**18


def _no_rule(node: NoReturn) -> NoReturn:
    """The last arm of an exhaustive `match` over the parse tree's kinds (`Statement`,
    `Expr`): mypy proves no kind reaches it (the argument must narrow to the bottom type,
    as for `typing.assert_never`, which Python 3.10 lacks; `mcl.mcpl.visitor.unknown_node`
    is the same for the MCPL tree)."""
    raise TypeError(f"the HDL resolver has no rule for {type(node).__name__} nodes")


def _bounded(number: float) -> bool:
    return number in (math.inf, -math.inf) or -MAX_VALUE <= number <= MAX_VALUE


def _arith(op: str, a: float, b: float) -> float | int | None:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return 0 if 0 in (a, b) else a * b
    if b == 0:
        return None
    q = a / b
    return int(q) if isinstance(a, int) and isinstance(b, int) and a % b == 0 else q


def _scale(number: float, factor: float) -> float | int:
    if number == math.inf:
        return math.inf
    scaled = number * factor
    return int(scaled) if float(scaled).is_integer() else scaled


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string \"{value}\""
    return "a value"
