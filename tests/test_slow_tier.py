"""The slow tier's list of single tests (tests/conftest.py, `SLOW_TESTS`) names tests that
exist: a renamed or removed test would otherwise leave a stale entry, and a slow test
renamed back into the fast tier would go unnoticed."""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _conftest() -> ModuleType:
    # by its path: `conftest` in sys.modules may be another folder's conftest.py
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONFTEST = _conftest()
SLOW_MODULES: tuple[str, ...] = CONFTEST.SLOW_MODULES
SLOW_TESTS: tuple[str, ...] = CONFTEST.SLOW_TESTS


@pytest.mark.parametrize("node_id", SLOW_TESTS)
def test_each_listed_test_exists(node_id: str) -> None:
    path, name = node_id.split("::")
    function, _, parameters = name.partition("[")
    assert not path.startswith(SLOW_MODULES), "the whole module is slow already"
    source = (ROOT / path).read_text(encoding="utf-8")
    defined = {node.name for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.FunctionDef)}
    assert function in defined
    if parameters:
        # a parameter id made from a path: its last part is written in the module or
        # made from a name it lists (`hopper_v17.mcpl` from "spmv/hopper_v17.mcpl")
        stem = re.sub(r"\.mcpl$", "", parameters.rstrip("]").split("/")[-1])
        assert stem in source


def test_the_hook_marks_the_listed_tests_and_no_other() -> None:
    """tests/conftest.py's collection hook marks a listed node id slow, and leaves the
    other parametrisations and tests of its module in the fast tier."""

    @dataclass
    class Item:
        nodeid: str
        markers: list[str] = field(default_factory=list)

        def add_marker(self, marker: pytest.MarkDecorator) -> None:
            self.markers.append(marker.name)

    listed = SLOW_TESTS[0]
    items = [Item(listed), Item(listed.split("[")[0] + "[other.mcpl]"),
             Item("tests/mcpl/test_statement_reuse.py::test_not_listed"),
             Item(SLOW_MODULES[0] + "test_anything.py::test_x")]
    CONFTEST.pytest_collection_modifyitems(None, items)
    assert [item.markers for item in items] == [["slow"], [], [], ["slow"]]
