"""The hierarchy is a parent map with its own tree algorithms (mcl/hdl/hierarchy.py): no
graph library is imported, so loading the library stays off `mcl`'s start-up time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcl.diagnostics import MclError
from mcl.hdl.hierarchy import Hierarchy
from mcl.hdl.library import default_library


def test_start_up_imports_no_graph_library() -> None:
    code = (
        "import sys, mcl.cli; mcl.cli.build_parser();"
        "from mcl.hdl.library import default_library; default_library().path('perfect', 'fermi');"
        "print('networkx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_hierarchy_is_the_tree_of_the_descriptions() -> None:
    lib = default_library()
    tree = lib.hierarchy
    assert ("nvidia", "fermi") in tree.edges and ("perfect", "cpu") in tree.edges
    assert len(tree.nodes) == len(lib.names()) and len(tree.edges) == len(lib) - 1
    assert lib.path("perfect", "hopper") == ["perfect", "accelerator", "gpu", "nvidia", "hopper"]
    assert lib.path("gpu", "gpu") == ["gpu"]
    assert lib.ancestors("fermi") == ["perfect", "accelerator", "gpu", "nvidia"]
    assert lib.children("nvidia") == ["fermi", "hopper"]


def test_path_upwards_or_sideways_is_an_error() -> None:
    lib = default_library()
    with pytest.raises(MclError, match="'gpu' is not below 'fermi'"):
        lib.path("fermi", "gpu")
    with pytest.raises(MclError, match="'fermi' is not below 'cpu'"):
        lib.path("cpu", "fermi")


def test_cycles_are_found_once_each_in_parent_order() -> None:
    tree = Hierarchy(["perfect", "a", "b", "c", "d"],
                     {"a": "b", "b": "c", "c": "a", "d": "perfect"})
    assert tree.cycles() == [["c", "b", "a"]]
    assert tree.ancestors("a") == ["c", "b"]  # farthest first; cut short inside the cycle
    assert tree.ancestors_first() == ["perfect", "d", "a", "b", "c"]
