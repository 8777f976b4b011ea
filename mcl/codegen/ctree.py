"""The C-family syntax tree that kernel emission builds, and its printer.

The emitters (statements.py, lanes.py, kernels.py and the backends' kernel emitters,
and the host harness's function writers) build the code of every kernel, device and
host function as a tree of the nodes below; each
node that stands for an MCPL statement carries the statement's source span. The printer
(`TreePrinter`) makes the text from the tree: the indentation is the node's depth in the
tree, each line of a span ends with its `// file.mcpl:LINE` comment and follows the
dialect's line directive of the span (CUDA's `#line`; paper 4.4: code and feedback stay
related to what the programmer wrote), and the bracket nesting that OpenCL compilers
limit (bracket_depth.py) is measured as the lines are printed: the braces from the
depth in the tree, plus the brackets of the line's own C text.

Expressions stay text (the C of `mcl.codegen.c_expr.ExprPrinter`): a line's `text` is
its code only, its comments are fields of the node.

    CodeLine(text, span, note, comment)  one line of C: a statement or declaration
    ReturnLine(...)                      a `return` line, which a backend may make a jump
    Comment(text, span)                  a line that is only a comment
    Pragma(text, note)                   `#pragma TEXT` at the depth of the code around it
    Directive(text, comment, span)       a preprocessor line (#if, #define), in column 0
    Compound(sections, close)            braces: `if (c) {` .. `} else {` .. `}`
    ForLoop(sections, close, unroll)     a `for` loop (the dialect spells its unroll pragma)
    FunctionDef(title, span, signature, body, before, notes)
    Verbatim(text)                       C written elsewhere (a dialect's header, a helper)
    TranslationUnit(parts)               the file: its parts one blank line apart
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.codegen.bracket_depth import Nesting, deepest_bracket
from mcl.diagnostics import Span

if TYPE_CHECKING:
    from mcl.codegen.dialect import Dialect

INDENT = "    "


def where(span: Span | None) -> str:
    """The trailing comment that points back to the MCPL source."""
    return f"  // {Path(span.file).name}:{span.line}" if span and span.file else ""


@dataclass(frozen=True)
class CodeLine:
    """One line of C at its block's depth: `text` (code only), then the `comment` of the
    code, then the comment of MCPL `span` (`// file.mcpl:LINE`) followed by `note`."""

    text: str
    span: Span | None = None
    note: str | None = None
    comment: str | None = None


@dataclass(frozen=True)
class ReturnLine(CodeLine):
    """A `return` statement (OpenMP's work-item loops make it a jump)."""


@dataclass(frozen=True)
class Comment:
    """A line that is only the comment `// text`, of MCPL `span`."""

    text: str
    span: Span | None = None


@dataclass(frozen=True)
class Pragma:
    """`#pragma text` at the depth of the code around it, with an optional comment."""

    text: str
    note: str | None = None


@dataclass(frozen=True)
class Directive:
    """A preprocessor line (`#if`, `#define`, `#endif`), then its `comment` and the
    comment of MCPL `span`; in column 0, or indented `indent` levels."""

    text: str
    comment: str | None = None
    span: Span | None = None
    indent: int = 0


@dataclass(frozen=True)
class Verbatim:
    """C text written elsewhere (a dialect's header, a helper function of the runtime
    prelude), printed as it stands."""

    text: str


@dataclass
class Compound:
    """Code in braces: each section an opening line (`if (c) {`, `} else {`) and the
    nodes inside it, one level deeper; then `close` (None: the last line inside closes)."""

    sections: list[tuple[CodeLine, list[Node]]]
    close: CodeLine | None = field(default_factory=lambda: CodeLine("}"))


@dataclass
class ForLoop(Compound):
    """A `for` loop; `unroll`: its constant trip count where a pragma should unroll it
    (unroll.py), spelled by the dialect (`Dialect.unroll_pragma`)."""

    unroll: int | None = None


Node = CodeLine | Comment | Pragma | Directive | Compound


@dataclass
class FunctionDef:
    """A kernel or device function: its opening comment (`// TITLE, file.mcpl:LINE`, with
    `notes` as comment lines before it), the preprocessor lines `before` the signature,
    the signature (up to its closing parenthesis), and the body."""

    title: str
    span: Span | None
    signature: str
    body: list[Node]
    before: list[Directive] = field(default_factory=list)
    notes: tuple[str, ...] = ()


TopNode = Node | FunctionDef | Verbatim


@dataclass
class TranslationUnit:
    """A generated file: its parts (the opening comment, the macros, each type, helper
    and function) one blank line apart."""

    parts: list[list[TopNode]]


def holds_loop(nodes: Iterable[Node]) -> bool:
    """Whether a loop stands anywhere among `nodes` or inside them."""
    for node in nodes:
        if isinstance(node, ForLoop):
            return True
        if isinstance(node, Compound) and any(holds_loop(body) for _, body in node.sections):
            return True
    return False


Leaf = CodeLine | Comment | Pragma | Directive


def rewrite(nodes: list[Node], change: Callable[[Leaf], Leaf]) -> list[Node]:
    """`nodes` with every node that is no braces, and every opening and closing line of
    braces, replaced by `change` of it."""

    def line(node: CodeLine) -> CodeLine:
        changed = change(node)
        assert isinstance(changed, CodeLine), "the lines of braces stay lines"
        return changed

    out: list[Node] = []
    for node in nodes:
        if isinstance(node, Compound):
            out.append(replace(
                node,
                sections=[(line(head), rewrite(body, change)) for head, body in node.sections],
                close=None if node.close is None else line(node.close)))
        else:
            out.append(change(node))
    return out


@dataclass
class TreePrinter:
    """Prints trees in `dialect` (None: the host's C or C++, with no line directives and
    no unroll pragmas). `nesting` is the deepest bracket nesting of the functions
    printed so far, at the MCPL statement where it was reached first."""

    dialect: Dialect | None
    nesting: Nesting = field(default_factory=Nesting)
    # The span of the statement printed last: the lines after it (closing braces,
    # guards) belong to it.
    _statement: Span | None = None
    # Whether the lines printed are a function's (the nesting counts only those).
    _measuring: bool = False

    def unit(self, unit: TranslationUnit) -> str:
        """The text of the file `unit`."""
        return "\n".join("".join(self.top(node) for node in part) for part in unit.parts)

    def top(self, node: TopNode) -> str:
        """The text of a node of a file's part, ending with a newline."""
        match node:
            case FunctionDef():
                return self.function(node)
            case Verbatim():
                return node.text
        return "".join(f"{line}\n" for line in self.node(node, 0))

    def function(self, f: FunctionDef) -> str:
        """The text of `f`, ending with a newline."""
        # The signature comes before the body (its parameters' brackets count too).
        self.nesting = self.nesting.deeper(Nesting(deepest_bracket(f.signature)[0], f.span))
        self._statement = f.span
        text = "".join(f"// {note}\n" for note in f.notes)
        text += f"// {f.title}{where(f.span).replace('  //', ',')}\n"
        text += "".join(f"{self.directive(d)}\n" for d in f.before)
        self._measuring = True
        try:
            body = "\n".join(self.lines(f.body, 1))
        finally:
            self._measuring = False
        return text + f"{f.signature}\n{{\n{body}\n}}\n"

    def lines(self, nodes: Iterable[Node], level: int) -> Iterator[str]:
        """The lines of `nodes` at block depth `level`."""
        for node in nodes:
            yield from self.node(node, level)

    def node(self, node: Node, level: int) -> Iterator[str]:
        match node:
            case CodeLine():
                yield from self.line(node, level)
            case Comment():
                yield from self.located(node.span, level, "")
                yield f"{INDENT * level}// {node.text}{where(node.span)}"
            case Pragma():
                yield self.pragma(node, level)
            case Directive():
                yield self.directive(node)
            case ForLoop():
                if node.unroll is not None and self.dialect is not None:
                    pragma = self.dialect.unroll_pragma(node.unroll, not holds_loop(
                        n for _, body in node.sections for n in body))
                    if pragma is not None:
                        yield self.pragma(pragma, level)
                yield from self.compound(node, level)
            case Compound():
                yield from self.compound(node, level)

    def compound(self, node: Compound, level: int) -> Iterator[str]:
        for head, body in node.sections:
            yield from self.line(head, level)
            yield from self.lines(body, level + 1)
        if node.close is not None:
            yield from self.line(node.close, level)

    def line(self, line: CodeLine, level: int) -> Iterator[str]:
        yield from self.located(line.span, level, line.text)
        comment = f"  // {line.comment}" if line.comment else ""
        source = where(line.span) if line.note is None else \
            f"{where(line.span) or '  //'} {line.note}"
        yield f"{INDENT * level}{line.text}{comment}{source}"

    def located(self, span: Span | None, level: int, code: str) -> Iterator[str]:
        """The dialect's line directive of `span` (where it has one), and the nesting of
        a line of `code` at `level` that belongs to it: inside `level` braces (the
        function body's included), plus the brackets of the code."""
        if span is not None:
            self._statement = span
            if span.file and self.dialect is not None:
                directive = self.dialect.line_directive(span)
                if directive is not None:
                    yield directive
        self.measure(level, code)

    def measure(self, level: int, code: str) -> None:
        """The nesting of a line of `code` of a function at block depth `level`."""
        if self._measuring:
            depth = level + deepest_bracket(code)[0]
            self.nesting = self.nesting.deeper(Nesting(depth, self._statement))

    def pragma(self, pragma: Pragma, level: int) -> str:
        self.measure(level, pragma.text)
        note = f"  // {pragma.note}" if pragma.note else ""
        return f"{INDENT * level}#pragma {pragma.text}{note}"

    @staticmethod
    def directive(directive: Directive) -> str:
        comment = f"  // {directive.comment}" if directive.comment else ""
        return f"{INDENT * directive.indent}{directive.text}{comment}{where(directive.span)}"
