"""set-constant: give a named constant of the kernel file another value.

The value goes where the constant's initial value stands in the source (its comments,
its `// tune:` and `// require:` lines stay); the constants derived from it follow by
themselves. Listed for the constants with `// tune:` values (docs/tuning.md): the values next to
the current one that the `// require:` rules allow are proposals of the constant's
group, of which `mcl apply --list` keeps the one the time model estimates fastest."""

from __future__ import annotations

from collections.abc import Mapping

from mcl.codegen.host_eval import Number
from mcl.diagnostics import MclError
from mcl.mcpl import ast
from mcl.refine.edits import TextEdit
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused
from mcl.tune.space import constant_values, parse_values, rule_problems, space_from_source


class SetConstant(Refinement):
    name = "set-constant"
    summary = "give a named constant (a `const` of the file) another value"
    parameters = (Parameter("name", "the constant"),
                  Parameter("value", "its new value, a number of the constant's type"))
    preconditions = (
        "`name` is a top-level `const` of the kernel's own file with an initial value",
        "the value is a number of the constant's type (an integer for an int constant) "
        "and differs from the current one",
        "every `// require:` rule of the file's constants holds with the new value",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        try:
            space = space_from_source(kernel.source.program.main, kernel.path, {},
                                       kernel.text)
        except MclError as exc:
            return [Refused(f"the file's tune comments do not read: {exc}")]
        out: list[Proposal | Refused] = []
        for name, values in space.params.items():
            current = constant_values(kernel.constants(), {}).get(name)
            for value in _neighbours(values, current):
                try:
                    out.append(self.propose(kernel, {"name": name, "value": str(value)}))
                except Refused as refused:
                    out.append(refused)
        return out

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        name = args.get("name")
        if not name:
            raise Refused("give the constant: set-constant:name=NAME,value=V")
        decl = next((c for c in kernel.constants() if c.name == name), None)
        if decl is None or decl.init is None or decl.init.span is None \
                or not kernel.in_file(decl.span):
            raise Refused(f"'{name}' is no constant with a value in {kernel.path.name}")
        value = _value(decl, args.get("value"))
        current = constant_values(kernel.constants(), {}).get(name)
        if value == current:
            raise Refused(f"{name} is {value} already")
        space = space_from_source(kernel.source.program.main, kernel.path, {}, kernel.text)
        problems = rule_problems(space, constant_values(kernel.constants(), {name: value}))
        if problems:
            raise Refused(f"{name} = {value} " + "; ".join(problems))
        edit = TextEdit.replacing(decl.init.span, str(value))
        return Proposal(self.name, (("name", name), ("value", str(value))), decl.init.span.line,
                        f"{name} = {value} (was {current})", (edit,), group=f"{self.name}:{name}")


def _neighbours(values: list[Number], current: Number | None) -> list[Number]:
    """The tune values next to the current one, below and above (one step of a
    refinement; a search over refinements takes more); all of them where the current
    value is none of the listed ones."""
    ordered = sorted(set(values))
    if current not in ordered:
        return ordered
    at = ordered.index(current)
    return ordered[max(at - 1, 0):at] + ordered[at + 1:at + 2]


def _value(decl: ast.Decl, text: str | None) -> Number:
    if text is None:
        raise Refused(f"give the value: set-constant:name={decl.name},value=V")
    try:
        (value,) = parse_values(text, f"the value of {decl.name}")
    except (MclError, ValueError):
        raise Refused(f"value={text}: not a number") from None
    kind = decl.type.name if isinstance(decl.type, ast.Prim) else ""
    if kind in ("int", "byte") and not isinstance(value, int):
        raise Refused(f"{decl.name} is an {kind}: {text} is not an integer")
    return value
