"""Load an MCPL program: a main file and, transitively, the modules it imports.

Packages map to directories below source roots (mcpl.md §2): `import lib.math.common;`
is the file `lib/math/common.mcpl` (or `.mcl`, the original extension) below the first
root that has it. Roots, in search order:
1. the root of the main file itself (its directory, minus one level per package part),
2. `-I DIR` directories (`include_dirs`),
3. the entries of the environment variable `MCL_PATH` (os.pathsep-separated),
4. the bundled standard library (`mcl.resources.mcpl_stdlib_dir()`).

A single-name import that names a hardware description (`import perfect;`) imports that
description, not a module. Names a module can use are its own definitions plus what its
imports export (all of a module without an `export` line). `Program.lookup_*` answer with
the definition or with a Diagnostic that says why the name is unknown or invisible.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcl.diagnostics import Diagnostic, MclError, Span, did_you_mean, error
from mcl.mcpl.ast import Decl, Function, Import, Module, TypeDef
from mcl.mcpl.parse import library_hwd_names, parse_file
from mcl.resources import mcpl_stdlib_dir
from mcl.source_files import source_lines

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary

EXTENSIONS = (".mcpl", ".mcl")
ENV_PATH = "MCL_PATH"

DefinitionKind = Literal["function", "type", "constant"]  # what a module defines by name


@dataclass(frozen=True)
class Program:
    """A main module and every module it imports, directly or not.

    `modules` maps qualified names (`lib.math.common`; the file stem for a lone file) to
    modules, the main module included. `hwd_imports` maps each module's qualified name to
    the hardware descriptions it imports. `files` gives the file each module came from."""

    main: Module
    modules: Mapping[str, Module]
    hwd_imports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    files: Mapping[str, Path] = field(default_factory=dict)
    roots: tuple[Path, ...] = ()

    # ------------------------------------------------------------------ modules

    def qualified_name(self, module: Module) -> str:
        """The name `module` is known by in this program."""
        for name, m in self.modules.items():
            if m is module:
                return name
        for name, m in self.modules.items():  # an equal copy (e.g. made by a pass)
            if m == module:
                return name
        raise KeyError("module is not part of this program")

    def _module(self, module: Module | str) -> tuple[str, Module]:
        if isinstance(module, str):
            return module, self.modules[module]
        return self.qualified_name(module), module

    def imported_modules(self, module: Module | str) -> list[tuple[str, Module]]:
        """The modules `module` imports (descriptions excluded), in import order."""
        _, mod = self._module(module)
        out = []
        for imp in mod.imports:
            if imp.dotted in self.modules:
                out.append((imp.dotted, self.modules[imp.dotted]))
        return out

    def module_of(self, definition: Function | TypeDef | Decl) -> Module:
        """The module that defines a function, type or top-level constant."""
        for m in self.modules.values():
            if any(d is definition for d in (*m.functions, *m.types, *m.constants)):
                return m
        raise KeyError("definition is not part of this program")

    def functions(self) -> list[tuple[str, Function]]:
        """Every function of the program with the qualified name of its module."""
        return [(name, f) for name, m in self.modules.items() for f in m.functions]

    # ------------------------------------------------------------------ lookups

    def lookup_function(
        self,
        name: str,
        from_module: Module | str,
        span: Span | None = None,
        extra_candidates: Iterable[str] = (),
    ) -> Function | Diagnostic:
        """The function `name` as seen from `from_module`, or a Diagnostic explaining why
        it is not visible there. `extra_candidates` (e.g. built-in names) join the
        did-you-mean hint."""
        return self._lookup("function", name, from_module, span, extra_candidates)

    def lookup_type(
        self, name: str, from_module: Module | str, span: Span | None = None
    ) -> TypeDef | Diagnostic:
        """The user type `name` as seen from `from_module`, or a Diagnostic."""
        return self._lookup("type", name, from_module, span, ())

    def lookup_constant(
        self, name: str, from_module: Module | str, span: Span | None = None
    ) -> Decl | Diagnostic:
        """The top-level constant `name` as seen from `from_module`, or a Diagnostic."""
        return self._lookup("constant", name, from_module, span, ())

    def visible(self, kind: DefinitionKind, name: str, from_module: Module | str) -> Any:
        """The definition `name` of `kind` that `from_module` sees, or None: what the
        `lookup_*` methods return where it is visible, without making the diagnostic
        (and its did-you-mean hint) of one that is not. The checker asks for every call
        of a built-in (`min`, `max`) whether a user function of that name is visible."""
        _, mod = self._module(from_module)
        own = _find(mod, kind, name)
        if own is not None:
            return own
        found = self._exported_by_imports(kind, name, mod)[0]
        return found[0][1] if len(found) == 1 else None

    def _exported_by_imports(self, kind: DefinitionKind, name: str, mod: Module
                             ) -> tuple[list[tuple[str, Any]], list[str]]:
        """The imported modules that define `name`: (those that export it, with the
        definition; those that do not)."""
        found: list[tuple[str, Any]] = []
        hidden: list[str] = []
        for imp_name, imported in self.imported_modules(mod):
            d = _find(imported, kind, name)
            if d is None:
                continue
            if _exported(imported, name):
                found.append((imp_name, d))
            else:
                hidden.append(imp_name)
        return found, hidden

    def visible_names(self, kind: DefinitionKind, from_module: Module | str) -> set[str]:
        """Names of the given kind that `from_module` can use."""
        _, mod = self._module(from_module)
        names = {d.name for d in _definitions(mod, kind)}
        for _, imported in self.imported_modules(mod):
            names |= {d.name for d in _definitions(imported, kind) if _exported(imported, d.name)}
        return names

    def _lookup(
        self,
        kind: DefinitionKind,
        name: str,
        from_module: Module | str,
        span: Span | None,
        extra: Iterable[str],
    ) -> Any:
        mod_name, mod = self._module(from_module)
        own = _find(mod, kind, name)
        if own is not None:
            return own
        found, hidden = self._exported_by_imports(kind, name, mod)
        code = f"mcpl-unknown-{kind}"
        if len(found) == 1:
            return found[0][1]
        if len(found) > 1:
            owners = " and ".join(n for n, _ in found)
            return error(
                f"mcpl-ambiguous-{kind}",
                f"{kind} '{name}' is exported by both {owners}",
                span,
                hint=f"define '{name}' in only one of the imported modules, or import only one",
            )
        if hidden:
            return error(
                code,
                f"{kind} '{name}' of module {hidden[0]} is not exported",
                span,
                hint=f"add '{name}' to the export line of {hidden[0]}",
            )
        elsewhere = [n for n, m in self.modules.items() if n != mod_name and _find(m, kind, name)]
        if elsewhere:
            return error(
                code,
                f"{kind} '{name}' is defined in module {elsewhere[0]}, which {mod_name} "
                "does not import",
                span,
                hint=f"add `import {elsewhere[0]};`",
            )
        candidates = self.visible_names(kind, mod) | set(extra)
        return error(
            code,
            f"unknown {kind} '{name}'",
            span,
            hint=did_you_mean(name, candidates),
        )


def _definitions(module: Module, kind: DefinitionKind) -> tuple[Any, ...]:
    if kind == "function":
        return module.functions
    if kind == "type":
        return module.types
    return module.constants


def _find(module: Module, kind: DefinitionKind, name: str) -> Any:
    return next((d for d in _definitions(module, kind) if d.name == name), None)


def _exported(module: Module, name: str) -> bool:
    return module.exports is None or name in module.exports


# ------------------------------------------------------------------------------- loading


def source_roots(include_dirs: Iterable[str | Path] = ()) -> list[Path]:
    """Search roots after the main file's own: `-I` dirs, `MCL_PATH`, the stdlib."""
    roots = [Path(d) for d in include_dirs]
    roots += [Path(p) for p in os.environ.get(ENV_PATH, "").split(os.pathsep) if p]
    roots.append(mcpl_stdlib_dir())
    return roots


def _main_root(path: Path, module: Module) -> Path:
    """The source root of the main file: its directory, one level up per package part."""
    root = path.resolve().parent
    for _ in module.package or ():
        root = root.parent
    return root


def module_name(module: Module, path: Path) -> str:
    """Qualified name of a module: package + module line, or the file stem (mcpl.md §2)."""
    name = module.name or path.stem
    return ".".join((*(module.package or ()), name))


def find_module_file(dotted: tuple[str, ...], roots: Iterable[Path]) -> Path | None:
    """The first `root/a/b/c.mcpl` (or `.mcl`) for import `a.b.c`."""
    for root in roots:
        base = root.joinpath(*dotted[:-1])
        for ext in EXTENSIONS:
            candidate = base / (dotted[-1] + ext)
            if candidate.is_file():
                return candidate
    return None


def _hwd_names(library: HwdLibrary | None) -> frozenset[str]:
    if library is None:
        return library_hwd_names()
    names = library.names
    return frozenset(names() if callable(names) else names)


class _Loader:
    def __init__(self, roots: list[Path], hwd_names: frozenset[str]):
        self.roots = roots
        self.hwd_names = hwd_names
        self.modules: dict[str, Module] = {}
        self.files: dict[str, Path] = {}
        self.hwd_imports: dict[str, tuple[str, ...]] = {}
        self.diagnostics: list[Diagnostic] = []

    def add(self, name: str, module: Module, path: Path, stack: list[str]) -> None:
        self.modules[name] = module
        self.files[name] = path
        hwds: list[str] = []
        prefixes = {f.hwd for f in module.functions}
        for imp in module.imports:
            if len(imp.path) == 1 and (
                imp.path[0] in self.hwd_names
                or (imp.path[0] in prefixes and not find_module_file(imp.path, self.roots))
            ):
                # A description import. One that only this module's functions name is
                # taken as such too; the checker reports it if no such description exists.
                hwds.append(imp.path[0])
            else:
                self.load_import(imp, [*stack, name])
        self.hwd_imports[name] = tuple(hwds)

    def load_import(self, imp: Import, stack: list[str]) -> None:
        dotted = imp.dotted
        if dotted in stack:
            cycle = " -> ".join([*stack[stack.index(dotted) :], dotted])
            self.diagnostics.append(
                error(
                    "mcpl-import-cycle",
                    f"import cycle: {cycle}",
                    imp.span,
                    hint="move what both modules need into a third module that both import",
                )
            )
            return
        if dotted in self.modules:
            return
        path = find_module_file(imp.path, self.roots)
        if path is None:
            self.diagnostics.append(self.missing(imp))
            return
        module = parse_file(path, self.hwd_names)
        declared = module_name(module, path)
        if module.name is not None and declared != dotted:
            self.diagnostics.append(
                error(
                    "mcpl-module-name",
                    f"{path} declares module {declared}, but is imported as {dotted}",
                    _header_span(path),
                    hint="the package and module lines must match the file's place below "
                    "its source root",
                )
            )
        self.add(dotted, module, path, stack)

    def missing(self, imp: Import) -> Diagnostic:
        dotted = imp.dotted
        relative = "/".join(imp.path) + ".mcpl"
        searched = ", ".join(str(r) for r in self.roots)
        if len(imp.path) == 1:
            hint = did_you_mean(dotted, self.hwd_names) or (
                f"no hardware description '{dotted}' and no file {relative} in {searched}"
            )
            return error(
                "mcpl-unknown-import",
                f"'{dotted}' is neither a hardware description nor a module",
                imp.span,
                hint=hint,
            )
        return error(
            "mcpl-unknown-import",
            f"module {dotted} not found",
            imp.span,
            hint=f"looked for {relative} (or .mcl) in {searched}; add its source root "
            f"with -I DIR or {ENV_PATH}",
        )


def as_program(program: Program | Module) -> Program:
    """`program`, or a lone module as a program of that one module."""
    if isinstance(program, Program):
        return program
    return Program(main=program, modules={program.name or "main": program})


def load_program(
    path: str | Path, include_dirs: Iterable[str | Path] = (), library: HwdLibrary | None = None
) -> Program:
    """Parse `path` and every module it imports. `library` is an HDL library (anything with
    `names()`); by default the bundled descriptions. Raises MclError for syntax errors,
    missing modules and import cycles (all reported, each at its import's span)."""
    path = Path(path)
    hwd_names = _hwd_names(library)
    main = parse_file(path, hwd_names)
    roots = [_main_root(path, main), *source_roots(include_dirs)]
    loader = _Loader(_unique(roots), hwd_names)
    loader.add(module_name(main, path), main, path, [])
    if loader.diagnostics:
        raise MclError(loader.diagnostics)
    return Program(
        main=main,
        modules=dict(loader.modules),
        hwd_imports=dict(loader.hwd_imports),
        files=dict(loader.files),
        roots=tuple(loader.roots),
    )


def _header_span(path: Path) -> Span:
    """Where a file states its package or module (for a mismatch with its place)."""
    try:
        lines = source_lines(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError):
        lines = []
    for i, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith(("package", "module")):
            col = len(line) - len(stripped) + 1
            return Span(str(path), i, col, i, len(line) + 1)
    return Span.point(path, 1, 1)


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for p in paths:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
