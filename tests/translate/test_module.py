"""Appendix A.1 on a hand-built library: the path, step-by-step translation of every
function on it, notes for other branches, errors for upward/sideways/unknown levels."""

from __future__ import annotations

import pytest

from mcl.diagnostics import MclError, Severity
from mcl.hdl.model import MemorySpace
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source
from mcl.translate import lineage, translate_function, translate_module

from .hierarchies import FLAT_MATMUL, HandLibrary, gpu_like, hand_library, perfect_like

LIB = hand_library()
HWD_NAMES = set(LIB.names())


def parse(src: str) -> ast.Module:
    return parse_source(src, hwd_names=HWD_NAMES)


def body_of(src: str, hwd: str = "warpy") -> tuple[ast.Stmt, ...]:
    return parse(f"{hwd} void f() {{ {src} }}").functions[0].body.stmts


MATMUL = "import flat;\n" + FLAT_MATMUL



def test_lineage_is_the_path_from_the_root():
    assert lineage(LIB, "warpy") == ["flat", "blocky", "warpy"]
    assert lineage(LIB, "flat") == ["flat"]


def test_two_steps_compose_into_readable_code():
    result = translate_module(parse(MATMUL), "warpy", LIB)
    f = result.module.functions[0]
    assert f.hwd == "warpy" and result.notes == ()
    assert [p.spaces for p in f.params] == [(), (), (), ("global",), ("global",), ("global",)]
    assert f.body.stmts == body_of(
        """
        int nrThreadsM = blocky.hierarchy.blocks.block.threads.max_nr_units;
        int nrBlocksM = (m + nrThreadsM - 1) / nrThreadsM;
        int nrThreadsTj = warpy.hierarchy.blocks.block.warps.warp.threads.nr_units;
        int nrWarpsTj = nrThreadsM / nrThreadsTj;
        foreach (int bi in n blocks) {
          foreach (int bj in nrBlocksM blocks) {
            foreach (int wtj in nrWarpsTj warps) {
              foreach (int ttj in nrThreadsTj threads) {
                int tj = wtj * nrThreadsTj + ttj;
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
        }
        """
    )
    # The module now imports the level it is written for and the one whose constant it reads.
    assert [i.dotted for i in result.module.imports] == ["warpy", "blocky"]


def test_memory_spaces_of_declarations_and_barriers_follow_appendix_a3():
    src = """
    blocky void f(int n, dev float[n] x) {
      foreach (int b in n blocks) {
        local float[64] t;
        foreach (int i in 64 threads) { t[i] = x[b]; barrier(local); x[b] = t[0]; }
      }
    }
    """
    f = translate_module(parse(src), "warpy", LIB).module.functions[0]
    spaces = [n.spaces for n in ast.walk(f) if isinstance(n, ast.Decl) and n.name == "t"]
    barriers = [n.space for n in ast.walk(f) if isinstance(n, ast.Barrier)]
    assert spaces == [("shared",)] and barriers == ["shared"]
    assert f.params[1].spaces == ("global",)


def test_functions_of_other_branches_are_left_alone_with_a_note():
    src = MATMUL + ("\nsidey void other(int n, dev float[n] x)"
                    " { foreach (int i in n threads) { x[i] = 0.0; } }")
    module = parse(src)
    result = translate_module(module, "warpy", LIB)
    assert result.module.functions[1] == module.functions[1]
    (note,) = result.notes
    assert note.severity == Severity.NOTE and note.code == "translate-other-branch"
    assert "'other'" in note.message and "sidey" in note.message
    assert "flat → blocky → warpy" in note.message
    assert note.span is not None and note.span.line == module.functions[1].span.line


def test_a_function_already_at_the_target_is_unchanged():
    src = "warpy void g(int n, global float[n] x) { foreach (int b in n blocks) { } }"
    module = parse(MATMUL + src)
    result = translate_module(module, "warpy", LIB)
    assert result.module.functions[1] == module.functions[1] and result.notes == ()


def test_translating_up_is_an_error_with_the_span_and_the_path():
    module = parse("warpy void g(int n) { }")
    with pytest.raises(MclError) as exc:
        translate_module(module, "blocky", LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "translate-upward" and d.span == module.functions[0].span
    assert "warpy → blocky" in d.message and "warpy is a leaf" in d.hint


def test_translating_sideways_is_an_error_naming_the_path_through_the_common_ancestor():
    module = parse("sidey void g(int n) { }")
    with pytest.raises(MclError) as exc:
        translate_module(module, "warpy", LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "translate-sideways" and d.span == module.functions[0].span
    assert "sidey → flat" in d.message and "flat → blocky → warpy" in d.message
    with pytest.raises(MclError, match="translate-sideways|different branches"):
        translate_function(module.functions[0], "warpy", LIB)


def test_an_unknown_level_gets_a_did_you_mean_hint():
    with pytest.raises(MclError) as exc:
        translate_module(parse(MATMUL), "warpi", LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "translate-unknown-level" and "'warpy'" in (d.hint or "")


def test_the_input_module_is_not_mutated():
    module = parse(MATMUL)
    before = repr(module)
    translate_module(module, "warpy", LIB)
    assert repr(module) == before


def test_read_only_spaces_map_to_read_only_spaces():
    source, target = perfect_like("ro_src"), gpu_like("ro_dst", parent="ro_src")
    source.parallelism.spaces.append(MemorySpace("constant", False, True, source.parallelism))
    target.parallelism.spaces.append(MemorySpace("cst", False, True, target.parallelism))
    lib = HandLibrary(source, target)
    src = """
    ro_src void f(int n, main float[n] x, constant float[n] k) {
      foreach (int i in n threads) { x[i] = k[i]; }
    }
    """
    module = parse_source(src, hwd_names={"ro_src", "ro_dst"})
    f = translate_module(module, "ro_dst", lib).module.functions[0]
    assert [p.spaces for p in f.params] == [(), ("dev",), ("cst",)]
