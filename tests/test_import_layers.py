"""The architecture tests itself (docs/architecture.md, "Layers"): every module of `mcl/`
belongs to one unit of the layer table, which this test reads from the document (one
table, so the two cannot drift); no module imports a unit of its own row or of a row above
its own; and no two modules of `mcl/` import each other, directly or around a cycle.

An import is read from the source (the AST), wherever it stands: at the top of a module or
inside a function (a lazy import is an import all the same, only later). The layer rule
counts the imports under `if TYPE_CHECKING:` too (an annotation naming a higher layer's
type still ties the lower layer to it); the cycle rule leaves them out, since they never
run. Importing `a.b.c` runs the `__init__` of the packages `a.b` (and `a`) first, unless
the importing module lies inside them already (its own packages have started importing
before it): the cycle rule counts those too, so a package whose `__init__` imports a
module that imports the package back from outside is a cycle."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGE = "mcl"


@dataclass(frozen=True)
class Import:
    """One import statement's target inside the package: `importer` (the file `file`)
    imports `module` at `line`; `typing_only` when it stands under `if TYPE_CHECKING:`."""

    importer: str
    module: str
    file: str
    line: int
    typing_only: bool

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


def modules(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of `package` (under `root`) by its dotted name; a package's
    `__init__.py` is the package's own name."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement under `tree` (in functions and classes too), with whether
    it stands under `if TYPE_CHECKING:` (its `else:` runs)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                yield from _statements_of(stmt, True)
            for stmt in node.orelse:
                yield from _statements_of(stmt, typing_only)
        else:
            yield from _statements_of(node, typing_only)


def _statements_of(node: ast.AST, typing_only: bool) -> Iterator[tuple[ast.stmt, bool]]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node, typing_only
    else:
        yield from _statements(node, typing_only)


def imports(name: str, path: Path, known: set[str], root: Path) -> list[Import]:
    """The modules of `known` that module `name` (at `path`) imports: `from a.b import c`
    imports module `a.b.c` where there is one, else `a.b`; a name outside `known` (the
    standard library, numpy) is left out."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for stmt, typing_only in _statements(ast.parse(path.read_text(), str(path))):
        if isinstance(stmt, ast.Import):
            targets = [alias.name for alias in stmt.names]
        else:
            assert isinstance(stmt, ast.ImportFrom)
            base = stmt.module or ""
            if stmt.level:
                anchor = package.split(".")[: len(package.split(".")) - stmt.level + 1]
                base = ".".join([*anchor, *([stmt.module] if stmt.module else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in stmt.names]
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside c
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append(Import(name, target, path.relative_to(root).as_posix(),
                                    stmt.lineno, typing_only))
    return found


def all_imports(root: Path, package: str = PACKAGE) -> list[Import]:
    found = modules(root, package)
    known = set(found)
    return [i for name, path in found.items() for i in imports(name, path, known, root)]


def _packages_run(importer: str, module: str) -> list[str]:
    """The packages whose `__init__` importing `module` runs first: those above it that
    do not hold `importer` (which are importing already)."""
    parts = module.split(".")
    above = [".".join(parts[:n]) for n in range(1, len(parts))]
    return [p for p in above if not (importer == p or importer.startswith(p + "."))]


def runtime_graph(found: list[Import]) -> nx.DiGraph:
    """Module → module for every import that runs (not `TYPE_CHECKING`), with the
    packages whose `__init__` it runs; each edge keeps the place of its first import."""
    graph = nx.DiGraph()
    for i in found:
        if i.typing_only:
            continue
        for target in [i.module, *_packages_run(i.importer, i.module)]:
            if target != i.importer and not graph.has_edge(i.importer, target):
                graph.add_edge(i.importer, target, where=i.where, via=i.module)
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    """The modules of each import cycle (a strongly connected component of more than one
    module), sorted."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def describe_cycle(graph: nx.DiGraph, members: list[str]) -> str:
    """A cycle's modules, then each import among them with its line."""
    inside = graph.subgraph(members)
    lines = [f"{len(members)} modules import each other: {', '.join(members)}"]
    for a, b in sorted(inside.edges()):
        data = inside.edges[a, b]
        how = f" (importing {data['via']} runs its __init__)" if data["via"] != b else ""
        lines.append(f"    {a} -> {b}: {data['where']}{how}")
    return "\n".join(lines)


# ------------------------------------------------------------------------- the layer table


def layer_table(text: str, title: str = "Layers") -> dict[str, int]:
    """Unit → row number from the table of the section `title`: `| 3 | `render`,
    `settings` | what |`. A unit is a top-level module or package of mcl (`__init__` is the
    package's own module), or of the package the section is about."""
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for unit in re.findall(r"`([\w.]+)`", cells[1]):
                assert unit not in rows, f"{unit} is in two rows of the layer table"
                rows[unit] = int(cells[0])
    return rows


def unit_of(module: str, package: str = PACKAGE) -> str:
    """The unit of `module` inside `package`: the module or subpackage right below it."""
    parts = module.split(".")[len(package.split(".")):]
    return parts[0] if parts else "__init__"


def layer_violations(found: list[Import], rows: dict[str, int], package: str = PACKAGE,
                     own_row: bool = False) -> list[str]:
    """Every import of a unit in a row above the importer's, and (unless `own_row`) in the
    importer's own row; only imports between modules of `package` count."""
    wrong = []
    inside = [i for i in found if f"{i.importer}.".startswith(f"{package}.")
              and f"{i.module}.".startswith(f"{package}.")]
    for i in inside:
        here, there = unit_of(i.importer, package), unit_of(i.module, package)
        if here != there and (rows[there] > rows[here]
                              or rows[there] == rows[here] and not own_row):
            where = "its own row" if rows[there] == rows[here] else f"row {rows[there]}"
            kind = " (under TYPE_CHECKING)" if i.typing_only else ""
            wrong.append(f"{i.where}: {here} (row {rows[here]}) imports {i.module}{kind}, "
                         f"of {where}")
    return sorted(wrong)


# ------------------------------------------------------------------------------ mcl itself


def test_every_module_of_mcl_belongs_to_one_unit_of_the_layer_table() -> None:
    rows = layer_table(ARCHITECTURE.read_text())
    units = {unit_of(m) for m in modules(ROOT)}
    assert len(set(rows.values())) >= 10
    assert sorted(units - set(rows)) == [], "place these in docs/architecture.md, Layers"
    assert sorted(set(rows) - units) == [], "the layer table names units mcl lacks"


def test_no_module_imports_its_own_row_or_a_higher_one() -> None:
    rows = layer_table(ARCHITECTURE.read_text())
    wrong = layer_violations(all_imports(ROOT), rows)
    assert not wrong, "imports against docs/architecture.md, Layers:\n" + "\n".join(wrong)


# docs/architecture.md, "Feedback in layers": the same rule inside mcl/feedback, where a
# row may hold units that import each other.
FEEDBACK = "mcl.feedback"


def test_every_module_of_feedback_belongs_to_one_unit_of_its_layer_table() -> None:
    rows = layer_table(ARCHITECTURE.read_text(), "Feedback in layers")
    units = {unit_of(m, FEEDBACK) for m in modules(ROOT) if f"{m}.".startswith(FEEDBACK + ".")}
    assert len(set(rows.values())) >= 6
    assert sorted(units - set(rows)) == [], "place these in docs/architecture.md"
    assert sorted(set(rows) - units) == [], "the feedback table names units mcl lacks"


def test_no_module_of_feedback_imports_a_higher_row() -> None:
    rows = layer_table(ARCHITECTURE.read_text(), "Feedback in layers")
    wrong = layer_violations(all_imports(ROOT), rows, FEEDBACK, own_row=True)
    assert not wrong, "imports against docs/architecture.md, Feedback in layers:\n" + \
        "\n".join(wrong)


def test_no_import_cycle_in_mcl() -> None:
    graph = runtime_graph(all_imports(ROOT))
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe_cycle(graph, c) for c in found)


def test_the_scan_sees_lazy_imports_and_leaves_typing_ones_out_of_the_cycles() -> None:
    found = all_imports(ROOT)
    graph = runtime_graph(found)
    # At the top of a module; inside a function (the error renderer, only on an error).
    assert graph.has_edge("mcl.pipeline", "mcl.translate")
    assert graph.has_edge("mcl.cli", "mcl.render")
    # The hardware model's nodes are the types of mcl.hdl.speed's arguments only.
    speed = [i for i in found if i.importer == "mcl.hdl.speed" and i.module == "mcl.hdl.model"]
    assert speed and all(i.typing_only for i in speed)
    assert not graph.has_edge("mcl.hdl.speed", "mcl.hdl.model")
    assert graph.has_edge("mcl.hdl.model", "mcl.hdl.speed")


# ------------------------------------------------------------ the rules on a small package


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_cycle_through_a_lazy_import_is_reported_with_its_modules_and_lines(
    tmp_path: Path,
) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg.b import g\n\ndef f():\n    return g()\n",
        "b.py": "def g():\n    from pkg import a\n    return a\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n",
        "d.py": "import pkg.c\n",
    })
    graph = runtime_graph(all_imports(root, "pkg"))
    assert cycles(graph) == [["pkg.a", "pkg.b"]]  # c's import of a is for types only
    text = describe_cycle(graph, ["pkg.a", "pkg.b"])
    assert "pkg.a -> pkg.b: pkg/a.py line 1" in text
    assert "pkg.b -> pkg.a: pkg/b.py line 2" in text


def test_a_package_whose_init_is_imported_back_from_outside_is_a_cycle(
    tmp_path: Path,
) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "sub/__init__.py": "from pkg.sub.inner import x\n",
        "sub/inner.py": "from pkg.sub import helpers\nx = helpers\n",  # inside: no cycle
        "sub/helpers.py": "from pkg.outer import y\n",
        "outer.py": "def y():\n    from pkg.sub.inner import x\n    return x\n",
    })
    graph = runtime_graph(all_imports(root, "pkg"))
    # outer imports pkg.sub.inner, which runs pkg.sub's __init__ first; inner's import of
    # its sibling through the package is no edge to the package.
    assert graph.has_edge("pkg.outer", "pkg.sub")
    assert not graph.has_edge("pkg.sub.inner", "pkg.sub")
    assert cycles(graph) == [["pkg.outer", "pkg.sub", "pkg.sub.helpers", "pkg.sub.inner"]]
    assert "(importing pkg.sub.inner runs its __init__)" in describe_cycle(
        graph, cycles(graph)[0])


def test_an_import_of_the_own_row_or_above_is_a_layer_violation(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "low.py": ("from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from pkg.high import H\n"),
        "side.py": "def f():\n    from pkg import other\n",
        "other.py": "",
        "high/__init__.py": "from pkg.low import x\n",
    })
    table = """# T\n\n## Layers\n\n| row | units | what |\n|---|---|---|\n
| 2 | `high` | top |\n| 1 | `low`, `side`, `other`, `__init__` | bottom |\n\n## Next\n
| 9 | `ignored` | another section's table |\n"""
    rows = layer_table(table)
    assert rows == {"high": 2, "low": 1, "side": 1, "other": 1, "__init__": 1}
    wrong = layer_violations(all_imports(root, "pkg"), rows, "pkg")
    assert wrong == [
        "pkg/low.py line 3: low (row 1) imports pkg.high (under TYPE_CHECKING), of row 2",
        "pkg/side.py line 2: side (row 1) imports pkg.other, of its own row",
    ]


def test_a_row_that_may_import_itself_still_may_not_import_upwards(tmp_path: Path) -> None:
    root = _package(tmp_path, {
        "__init__.py": "",
        "sub/__init__.py": "",
        "sub/low.py": "from pkg.sub.side import y\nfrom pkg.sub.high import z\n",
        "sub/side.py": "def y():\n    from pkg.sub import low\n",
        "sub/high.py": "z = 1\n",
        "outside.py": "from pkg.sub.high import z\n",  # not inside pkg.sub: not counted
    })
    table = ("# T\n\n## Sub\n\n| row | units | what |\n|---|---|---|\n| 2 | `high` | top |\n"
             "| 1 | `low`, `side`, `__init__` | below |\n")
    rows = layer_table(table, "Sub")
    wrong = layer_violations(all_imports(root, "pkg"), rows, "pkg.sub", own_row=True)
    assert wrong == ["pkg/sub/low.py line 2: low (row 1) imports pkg.sub.high, of row 2"]


# docs/architecture.md, "Feedback in layers": the descriptions' performance feedback
# functions (hwdescs/*_feedback.py, paper 6.5) stand outside mcl and use its feedback API
# only, so the compiler's inside can change under them.
FEEDBACK_API = {f"mcl.feedback.{name}" for name in
                ("kernel_api", "lockstep", "occupancy", "warp_access", "program_view")}


def test_the_descriptions_feedback_functions_import_only_the_feedback_api() -> None:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "hwdescs").glob("*_feedback.py")):
        for stmt, _ in _statements(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else \
                [stmt.module or ""] if isinstance(stmt, ast.ImportFrom) else []
            found.setdefault(path.name, set()).update(
                n for n in names if n == PACKAGE or n.startswith(PACKAGE + "."))
    assert len(found) >= 3 and all(found.values())
    wrong = {name: sorted(mods - FEEDBACK_API) for name, mods in found.items()
             if mods - FEEDBACK_API}
    assert wrong == {}
