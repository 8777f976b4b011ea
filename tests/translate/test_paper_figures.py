"""The paper's own examples with the bundled descriptions: matmul (Fig. 2) translated to
accelerator changes only its level and spaces (section 5); translated to gpu it has the
structure of Fig. 9 — plus the guard for sizes that do not divide."""

from __future__ import annotations

from functools import cache

from mcl.hdl.library import HwdLibrary, default_library
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_file, parse_source
from mcl.resources import kernels_dir
from mcl.translate import translate_module

MATMUL = kernels_dir() / "matmul" / "perfect.mcpl"


@cache
def library() -> HwdLibrary:
    return default_library()


def stmts(src: str) -> tuple[ast.Stmt, ...]:
    return parse_source(f"gpu void f() {{ {src} }}").functions[0].body.stmts


def test_matmul_to_accelerator_only_changes_the_level_and_the_spaces():
    original = parse_file(MATMUL)
    f = translate_module(original, "accelerator", library()).module.functions[0]
    assert f.hwd == "accelerator" and f.body == original.functions[0].body
    assert [p.spaces for p in f.params] == [(), (), (), ("dev",), ("dev",), ("dev",)]


def test_matmul_to_gpu_has_the_structure_of_fig_9():
    f = translate_module(parse_file(MATMUL), "gpu", library()).module.functions[0]
    dims, nest = f.body.stmts[:2], f.body.stmts[2]
    # Fig. 9 lines 1-3: dimension statements read the description's constant.
    assert dims == stmts(
        """
        int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;
        int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;
        """
    )
    # Lines 5-7: blocks bi, blocks bj, threads tj.
    bi = nest
    bj = bi.body.stmts[0]
    tj = bj.body.stmts[0]
    assert [(x.var, x.group) for x in (bi, bj, tj)] == [
        ("bi", "blocks"), ("bj", "blocks"), ("tj", "threads"),
    ]
    assert [bi.count, bj.count, tj.count] == [
        ast.Name("n"), ast.Name("nrBlocksM"), ast.Name("nrThreadsM")]
    assert len(bi.body.stmts) == 1 and len(bj.body.stmts) == 1
    # Lines 8-9: indexing statements; lines 11-15 unchanged, under the guard for j < m.
    index, guarded = tj.body.stmts[:2], tj.body.stmts[2:]
    assert index == stmts("int i = bi; int j = bj * nrThreadsM + tj;")
    original_body = parse_file(MATMUL).functions[0].body.stmts[0].body.stmts[0].body
    assert guarded == (ast.If(ast.Binary("<", ast.Name("j"), ast.Name("m")), original_body),)
