"""The interpreter's state for one run: the checked program (its side tables say what each
name stands for), the hardware-description library, and the functions compiled so far
(each compiled once, on first call)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, Span
from mcl.identity import Ref
from mcl.interp.compile_expr import ExprCompiler, Frame, fail, with_cast
from mcl.interp.compile_stmt import FunctionCompiler, ReturnSignal, reshape_view
from mcl.interp.program import is_library_stub
from mcl.mcpl import ast
from mcl.mcpl.builtins import Builtin

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram


class Engine:
    def __init__(self, checked: CheckedProgram, library: HwdLibrary | None = None):
        # A program with errors runs as far as the checker resolved it (the interpreter's
        # tests run recursion and host code that OpenCL forbids); `mcl run` runs clean ones.
        self.program = checked.program
        self.tables = checked.tables
        self.library = library
        self._compiled: dict[Ref[ast.Function], CompiledFunction] = {}
        self._constants: dict[Ref[ast.Decl], object] = {}
        self._hwds: dict[str, Any] = {}
        self._writes: dict[Ref[ast.Function], set[str]] = {}
        self.entry: ast.Function | None = None  # the function being run (not a callee)

    # -- hardware descriptions --------------------------------------------------------
    def hwd(self, name: str) -> Any:
        """The resolved description `name`, or None when there is no library or no such
        description (barriers then synchronise the innermost units)."""
        if self.library is None:
            return None
        if name not in self._hwds:
            try:
                self._hwds[name] = self.library.get(name)
            except (MclError, LookupError):
                self._hwds[name] = None
        return self._hwds[name]

    def hwd_constant(self, path: tuple[str, ...], span: Span | None) -> int | float:
        """The number behind `gpu.hierarchy.blocks.block.threads.max_nr_units`."""
        dotted = ".".join(path)
        hwd = self.hwd(path[0])
        if hwd is None:
            raise fail(
                "hwd-constant",
                f"cannot read '{dotted}': hardware description '{path[0]}' is not available",
                span,
            )
        value = hwd.value(path)
        number = getattr(value, "value", value)
        if value is None or isinstance(number, (bool, str)) or number is None:
            raise fail("hwd-constant", f"'{dotted}' is not a numeric property", span)
        if number == float("inf"):
            raise fail(
                "hwd-constant",
                f"'{dotted}' is unlimited, so it has no value to compute with",
                span,
                hint="use a constant of a description that states a finite number",
            )
        return int(number) if float(number).is_integer() else float(number)

    # -- module-level names -----------------------------------------------------------
    def type_def(self, t: ast.NamedType) -> ast.TypeDef:
        """The definition the written type `t` stands for."""
        binding = self.tables.binding_of(t)
        if binding is None or not isinstance(binding.node, ast.TypeDef):
            raise fail("unknown-name", f"the checker resolved no type '{t.name}'", t.span,
                       hint="`mcl check` says why")
        return binding.node

    def constant_value(self, decl: ast.Decl) -> object:
        """The value of a top-level `const` (evaluated once, at its first use)."""
        key = Ref(decl)
        if key not in self._constants:
            if decl.init is None:
                raise fail("const", f"constant '{decl.name}' has no value", decl.span)
            self._constants[key] = None  # guards against cyclic definitions
            compiler = ExprCompiler(self, _NO_FUNCTION)
            t = compiler.declared(decl).type
            compiled = with_cast(compiler.expr(decl.init), t, decl.init, decl.span)
            self._constants[key] = compiled.fn([None])
        value = self._constants[key]
        if value is None:
            raise fail("const", f"constant '{decl.name}' is defined in terms of itself", decl.span)
        return value

    def compiled(self, function: ast.Function) -> CompiledFunction:
        key = Ref(function)
        if key not in self._compiled:
            compiled = CompiledFunction(self, function)
            self._compiled[key] = compiled  # before building: recursive calls find it
            compiled.build()
        return self._compiled[key]

    def written_params(self, function: ast.Function) -> set[str]:
        """Parameters a function may write: assignment targets, and arguments passed to
        callees at positions they write (built-ins by their signature)."""
        key = Ref(function)
        if key in self._writes:
            return self._writes[key]
        self._writes[key] = set()  # recursion: assume nothing more
        names: set[str] = set()
        for node in ast.walk(function.body):
            match node:
                case ast.Assign() | ast.IncDec():
                    names.add(ast.root_name(node.target) or "")
                case ast.Swap():
                    names |= {ast.root_name(node.left) or "", ast.root_name(node.right) or ""}
                case ast.Call():
                    for i in self._written_positions(node):
                        if i < len(node.args):
                            names.add(ast.root_name(node.args[i]) or "")
        if is_library_stub(function):
            for s in function.body.stmts:
                if isinstance(s, ast.CallStmt) and s.call.func == "mcl_builtin_write":
                    names |= {ast.root_name(a) or "" for a in s.call.args}
        result = names & {p.name for p in function.params}
        self._writes[key] = result
        return result

    def _written_positions(self, call: ast.Call) -> set[int]:
        binding = self.tables.binding_of(call)
        target = binding.node if binding is not None else None  # None: a signature call
        if isinstance(target, ast.Function):
            written = self.written_params(target)
            return {i for i, p in enumerate(target.params) if p.name in written}
        if isinstance(target, Builtin):
            return {i for i, mode in enumerate(target.modes) if "w" in mode}
        return set()


_NO_FUNCTION = ast.Function("", ast.Prim("void"), "<constants>", (), ast.Block(()))


class CompiledFunction:
    """A function compiled to closures; `invoke` runs it on a fresh frame."""

    def __init__(self, engine: Engine, function: ast.Function):
        self.engine = engine
        self.function = function
        self.written_params = engine.written_params(function)
        self.param_slots: list[int] = []
        self._shape_checks: list[tuple[int, str, Any]] = []
        self._run: Any = None
        self._nslots = 0

    def build(self) -> None:
        compiler = FunctionCompiler(self.engine, self.function)
        for p in self.function.params:
            self.param_slots.append(compiler.declare(p).slot)
        for p, slot in zip(self.function.params, self.param_slots, strict=False):
            if isinstance(p.type, ast.ArrayType):
                self._shape_checks.append((slot, p.name, compiler.shape_fn(p.type)))
        body = compiler.stmt(self.function.body)
        self._run = body.run
        self._nslots = compiler.slot_counts[0]

    def invoke(self, values: list[object], span: Span | None) -> tuple[object, Frame]:
        frame: Frame = [None] * self._nslots
        for slot, value in zip(self.param_slots, values, strict=False):
            frame[slot] = value
        for slot, name, shape_fn in self._shape_checks:
            frame[slot] = self._conform(frame[slot], shape_fn(frame), name, span)
        try:
            self._run(frame)
        except ReturnSignal as signal:
            return signal.value, frame
        if not (isinstance(self.function.ret, ast.Prim) and self.function.ret.name == "void"):
            raise fail(
                "missing-return",
                f"function '{self.function.name}' ended without returning a value",
                self.function.span,
            )
        return None, frame

    def _conform(self, array: Any, shape: tuple[int, ...], name: str, span: Span | None) -> Any:
        """An array argument must have the parameter's declared sizes; one with the same
        number of elements in another shape is seen through a view (as C would)."""
        fname = self.function.name
        shape = tuple(int(n) for n in shape)
        if getattr(array, "shape", None) == shape:
            return array
        if not hasattr(array, "shape"):
            raise fail("arguments", f"argument '{name}' of '{fname}' must be an array", span)
        size = 1
        for n in shape:
            size *= n
        if array.size == size:
            return reshape_view(array, shape, span, name)
        raise fail(
            "arguments",
            f"argument '{name}' of '{fname}' has shape {tuple(array.shape)}, but its declared "
            f"sizes give {shape}",
            span or self.function.span,
        )
