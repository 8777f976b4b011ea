"""Appendix A.4 on hand-built hierarchies (no HDL loader): re-targeting, splitting,
rounding up with guards, barriers kept reachable, readable unique names."""

from __future__ import annotations

import pytest

from mcl.diagnostics import MclError
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source
from mcl.mcpl.varying import names_in
from mcl.translate.counts import StaticInts, host_constants
from mcl.translate.foreach import translate_foreach_stmts
from mcl.translate.naming import NameSupply
from mcl.translate.step import Step

from .hierarchies import (
    FLAT_MATMUL,
    clusters_like,
    gpu_like,
    groups_like,
    mapping,
    perfect_like,
    warps_like,
)

FLAT, BLOCKY, WARPY = perfect_like(), gpu_like(), warps_like()
DESCS = {d.name: d for d in (FLAT, BLOCKY, WARPY)}
HWD_NAMES = set(DESCS)
FLAT_TO_BLOCKY = Step(FLAT, BLOCKY, mapping(FLAT, BLOCKY, {"threads": ["blocks", "threads"]}))
BLOCKY_TO_WARPY = Step(
    BLOCKY, WARPY, mapping(BLOCKY, WARPY, {"blocks": ["blocks"], "threads": ["warps", "threads"]})
)


def translate(src: str, step: Step) -> ast.Function:
    module = parse_source(src, hwd_names=HWD_NAMES)
    f = module.functions[0]
    statics = host_constants(f, module, StaticInts(DESCS, {}))
    names = NameSupply(names_in(f))
    globals_ = {p.name for p in f.params}
    return translate_foreach_stmts(f, step, names, statics, globals_)


def body_of(src: str) -> tuple[ast.Stmt, ...]:
    """Statements of a function body written in MCPL (compared as AST, spans ignored)."""
    return parse_source(f"blocky void f() {{ {src} }}", hwd_names=HWD_NAMES).functions[0].body.stmts





def test_matmul_split_has_the_structure_of_fig_9_with_a_guard():
    f = translate(FLAT_MATMUL, FLAT_TO_BLOCKY)
    assert f.body.stmts == body_of(
        """
        int nrThreadsM = blocky.hierarchy.blocks.block.threads.max_nr_units;
        int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;
        foreach (int bi in n blocks) {
          foreach (int bj in nrBlocksM blocks) {
            foreach (int tj in nrThreadsM threads) {
              int i = bi;
              int j = bj * nrThreadsM + tj;
              if (j < m) {
                float sum = 0.0;
                for (int k = 0; k < p; k++) { sum += a[i, k] * b[k, j]; }
                c[i, j] = sum;
              }
            }
          }
        }
        """
    )


def test_a_count_known_to_divide_needs_no_guard():
    f = translate(
        "flat void f(main float[4096] x) { foreach (int i in 4096 threads) { x[i] = 1.0; } }",
        FLAT_TO_BLOCKY,
    )
    assert f.body.stmts == body_of(
        """
        int nrThreadsI = blocky.hierarchy.blocks.block.threads.max_nr_units;
        int nrBlocksI = 4096 / nrThreadsI;
        foreach (int bi in nrBlocksI blocks) {
          foreach (int ti in nrThreadsI threads) {
            int i = bi * nrThreadsI + ti;
            x[i] = 1.0;
          }
        }
        """
    )


def test_a_count_that_does_not_divide_is_rounded_up_and_guarded():
    f = translate(
        "flat void f(main float[4097] x) { foreach (int i in 4097 threads) { x[i] = 1.0; } }",
        FLAT_TO_BLOCKY,
    )
    dims = f.body.stmts[:2]
    assert dims[1].init == body_of("int z = (4097 + nrThreadsI - 1) / nrThreadsI;")[0].init
    innermost = f.body.stmts[2].body.stmts[0].body.stmts
    assert innermost[1] == body_of("if (i < 4097) { x[i] = 1.0; }")[0]


def test_host_dimension_from_an_earlier_step_is_known_statically():
    # gpu -> fermi: nrThreadsM = 1024 splits into warps of exactly 32: no guard needed.
    src = """
    blocky void f(int m, dev float[m] x) {
      int nrThreadsM = blocky.hierarchy.blocks.block.threads.max_nr_units;
      int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;
      foreach (int bj in nrBlocksM blocks) {
        foreach (int tj in nrThreadsM threads) {
          int j = bj * nrThreadsM + tj;
          if (j < m) { x[j] = 1.0; }
        }
      }
    }
    """
    f = translate(src, BLOCKY_TO_WARPY)
    assert f.body.stmts == body_of(
        """
        int nrThreadsM = blocky.hierarchy.blocks.block.threads.max_nr_units;
        int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;
        int nrThreadsTj = warpy.hierarchy.blocks.block.warps.warp.threads.nr_units;
        int nrWarpsTj = nrThreadsM / nrThreadsTj;
        foreach (int bj in nrBlocksM blocks) {
          foreach (int wtj in nrWarpsTj warps) {
            foreach (int ttj in nrThreadsTj threads) {
              int tj = wtj * nrThreadsTj + ttj;
              int j = bj * nrThreadsM + tj;
              if (j < m) { x[j] = 1.0; }
            }
          }
        }
        """
    )


def test_simple_retargeting_keeps_the_foreach_and_its_declarations():
    src = """
    blocky void f(int n, dev float[n] x) {
      foreach (int b in n blocks) {
        local float[64] t;
        foreach (int i in 64 threads) { t[i] = x[b]; }
      }
    }
    """
    f = translate(src, BLOCKY_TO_WARPY)
    outer = f.body.stmts[-1]
    assert isinstance(outer, ast.Foreach) and (outer.var, outer.group) == ("b", "blocks")
    assert outer.body.stmts[0] == body_of("local float[64] t;")[0]
    # 64 threads = 2 warps of 32: covered exactly, no guard.
    warps = outer.body.stmts[1]
    assert (warps.group, warps.body.stmts[0].group) == ("warps", "threads")
    assert not any(isinstance(s, ast.If) for s in warps.body.stmts[0].body.stmts)


REDUCTION = """
blocky void r(int n, int chunk, dev float[n] x, dev float[n] out) {
  foreach (int b in n blocks) {
    local float[chunk] l;
    foreach (int t in chunk threads) {
      int i = b * chunk + t;
      float v = x[i];
      l[t] = v;
      barrier(local);
      for (int s = 1; s < chunk; s *= 2) {
        if (t % (2 * s) == 0 && t + s < chunk) { l[t] += l[t + s]; }
        barrier(local);
      }
      if (t == 0) { out[b] = l[0] + v - v; }
    }
  }
}
"""


def test_barriers_stay_outside_the_guard_and_declarations_are_hoisted():
    f = translate(REDUCTION, BLOCKY_TO_WARPY)
    threads = f.body.stmts[-1].body.stmts[1].body.stmts[0]
    assert threads.group == "threads"
    assert threads.body.stmts == body_of(
        """
        int t = wt * nrThreadsChunk + tt;
        float v;
        if (t < chunk) {
          int i = b * chunk + t;
          v = x[i];
          l[t] = v;
        }
        barrier(local);
        for (int s = 1; s < chunk; s *= 2) {
          if (t < chunk) {
            if (t % (2 * s) == 0 && t + s < chunk) { l[t] += l[t + s]; }
          }
          barrier(local);
        }
        if (t < chunk) {
          if (t == 0) { out[b] = l[0] + v - v; }
        }
        """
    )


@pytest.mark.parametrize(("src", "step"),
                         [(FLAT_MATMUL, FLAT_TO_BLOCKY), (REDUCTION, BLOCKY_TO_WARPY)])
def test_generated_guards_point_at_the_count_they_come_from(src: str, step: Step):
    # Guards used to have no span, so a diagnostic about one could not be placed.
    f = translate(src, step)
    guards = [n for n in ast.walk(f) if isinstance(n, ast.If) and isinstance(n.cond, ast.Binary)
              and n.cond.op == "<" and isinstance(n.cond.left, ast.Name)
              and n.cond.left.name in ("j", "t")]
    assert guards
    counts = {fe.count.span for fe in ast.walk(parse_source(src, hwd_names=HWD_NAMES))
              if isinstance(fe, ast.Foreach)}
    for guard in guards:
        assert guard.span is not None and guard.span == guard.cond.span
        assert guard.span in counts


def test_a_pure_declaration_read_after_a_barrier_is_hoisted_whole():
    src = """
    blocky void f(int n, int k, dev float[n] x) {
      foreach (int t in k threads) {
        int half = k / 2;
        float acc = 0.0;
        barrier(local);
        x[t] = acc + half;
      }
    }
    """
    f = translate(src, BLOCKY_TO_WARPY)
    body = f.body.stmts[-1].body.stmts[0].body.stmts
    assert body[1:4] == body_of("int half = k / 2; float acc = 0.0; barrier(local);")


def test_a_barrier_in_a_loop_that_differs_between_units_is_an_error():
    src = """
    blocky void f(int n, int k, dev float[n] x) {
      foreach (int t in k threads) {
        for (int s = 0; s < t; s++) { barrier(local); }
      }
    }
    """
    with pytest.raises(MclError) as exc:
        translate(src, BLOCKY_TO_WARPY)
    d = exc.value.diagnostics[0]
    assert d.code == "translate-unsafe-guard" and "'t'" in d.message
    assert d.span is not None and d.span.line == 4


def test_a_barrier_in_a_loop_over_a_value_computed_per_unit_is_an_error():
    src = """
    blocky void f(int n, int k, dev float[n] x) {
      foreach (int t in k threads) {
        int stop = toInt(x[t]);
        for (int s = 0; s < stop; s++) { barrier(local); }
      }
    }
    """
    with pytest.raises(MclError, match="'stop'"):
        translate(src, BLOCKY_TO_WARPY)


def test_generated_names_do_not_clash_with_existing_ones():
    src = FLAT_MATMUL.replace("float sum = 0.0;",
                              "float sum = 0.0; float bj = 1.0; int nrThreadsM = 2;")
    f = translate(src, FLAT_TO_BLOCKY)
    assert [s.name for s in f.body.stmts[:2]] == ["nrThreadsM2", "nrBlocksM"]
    nest = f.body.stmts[2]
    assert [nest.var, nest.body.stmts[0].var] == ["bi", "bj2"]


def test_foreach_over_one_group_that_is_not_perfectly_nested_is_an_error():
    src = """
    flat void f(int n, main float[n] x) {
      foreach (int i in n threads) {
        x[i] = 0.0;
        foreach (int j in n threads) { x[j] = 1.0; }
      }
    }
    """
    with pytest.raises(MclError) as exc:
        translate(src, FLAT_TO_BLOCKY)
    assert exc.value.diagnostics[0].code == "translate-imperfect-nest"


def test_dimension_statements_go_to_host_code_before_the_outermost_foreach():
    src = """
    flat void f(int n, main float[n] x) {
      int unused = 0;
      foreach (int i in n threads) { x[i] = 1.0; }
      foreach (int i in n threads) { x[i] = 2.0; }
    }
    """
    f = translate(src, FLAT_TO_BLOCKY)
    kinds = [type(s).__name__ for s in f.body.stmts]
    assert kinds == ["Decl", "Decl", "Decl", "Foreach", "Decl", "Decl", "Foreach"]
    assert [s.name for s in f.body.stmts if isinstance(s, ast.Decl)] == [
        "unused", "nrThreadsN", "nrBlocksN", "nrThreadsN2", "nrBlocksN2",
    ]


def test_translation_does_not_mutate_its_input():
    module = parse_source(FLAT_MATMUL, hwd_names=HWD_NAMES)
    before = repr(module)
    f = module.functions[0]
    translate_foreach_stmts(
        f, FLAT_TO_BLOCKY, NameSupply(names_in(f)), StaticInts(DESCS, {}), {"n", "m", "p"}
    )
    assert repr(module) == before


def test_splitting_an_outer_par_group_puts_indexing_and_guard_inside_the_executing_units():
    groupy, clustery = groups_like(), clusters_like()
    step = Step(
        groupy, clustery,
        mapping(groupy, clustery, {"groups": ["clusters", "groups"], "threads": ["threads"]}),
    )
    src = """
    groupy void f(int n, dev float[n, 64] x) {
      foreach (int g in n groups) {
        local float[64] buf;
        foreach (int t in 64 threads) {
          buf[t] = x[g, t];
          barrier(local);
          x[g, t] = buf[63 - t];
        }
      }
    }
    """
    module = parse_source(src, hwd_names={"groupy", "clustery"})
    f = module.functions[0]
    descs = {"groupy": groupy, "clustery": clustery}
    out = translate_foreach_stmts(
        f, step, NameSupply(names_in(f)), StaticInts(descs, {}), {"n", "x"}
    )
    expected = parse_source(
        """
        clustery void f() {
          int nrGroupsN = clustery.hierarchy.clusters.cluster.groups.nr_units;
          int nrClustersN = (n + nrGroupsN - 1) / nrGroupsN;
          foreach (int cg in nrClustersN clusters) {
            foreach (int gg in nrGroupsN groups) {
              local float[64] buf;
              foreach (int t in 64 threads) {
                int g = cg * nrGroupsN + gg;
                if (g < n) { buf[t] = x[g, t]; }
                barrier(local);
                if (g < n) { x[g, t] = buf[63 - t]; }
              }
            }
          }
        }
        """,
        hwd_names={"clustery"},
    )
    assert out.body.stmts == expected.functions[0].body.stmts


def test_a_statement_above_the_executing_units_cannot_take_the_indexing_statement():
    groupy, clustery = groups_like(), clusters_like()
    step = Step(
        groupy, clustery,
        mapping(groupy, clustery, {"groups": ["clusters", "groups"], "threads": ["threads"]}),
    )
    src = "groupy void f(int n, dev float[n] x) { foreach (int g in n groups) { x[g] = 1.0; } }"
    f = parse_source(src, hwd_names={"groupy"}).functions[0]
    with pytest.raises(MclError) as exc:
        translate_foreach_stmts(
            f, step, NameSupply(names_in(f)), StaticInts({"clustery": clustery}, {}), {"n"}
        )
    assert exc.value.diagnostics[0].code == "translate-statement-above-units"
