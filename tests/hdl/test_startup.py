"""Loading the library and building the CLI must not import networkx (about 100 ms of every
`mcl` start-up); the networkx DiGraph of the hierarchy is built on first use."""

from __future__ import annotations

import subprocess
import sys

from mcl.hdl.library import default_library


def test_start_up_does_not_import_networkx() -> None:
    code = (
        "import sys, mcl.cli; mcl.cli.build_parser();"
        "from mcl.hdl.library import default_library; default_library().path('perfect', 'fermi');"
        "print('networkx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_graph_is_the_networkx_tree_of_the_hierarchy() -> None:
    lib = default_library()
    graph = lib.graph
    assert ("nvidia", "fermi") in graph.edges and ("perfect", "cpu") in graph.edges
    assert graph.number_of_nodes() == len(lib.names()) and graph.number_of_edges() == len(lib) - 1
    assert lib.path("perfect", "hopper") == ["perfect", "accelerator", "gpu", "nvidia", "hopper"]
