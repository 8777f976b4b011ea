"""The cache analysis (paper 6.4) on real kernels and descriptions: the paper's matmul
feedback at fermi and xeon_phi, and best/worst line counts against a brute-force
simulation of each loop's access stream."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcl import pipeline
from mcl.diagnostics import Severity as DiagnosticSeverity
from mcl.feedback.analyses import cache
from mcl.feedback.facts.hardware import cached_spaces
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.facts.predictable import loops_since_declaration
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import applicable
from mcl.feedback.values import evaluate
from mcl.hdl.library import default_library
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.translate import translate_program

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "kernels" / "matmul" / "perfect.mcpl"
SIZES = {"n": 2048, "m": 2048, "p": 2048}


@pytest.fixture(scope="module")
def library():
    return default_library()


def facts_at(path: Path, level: str | None, library):
    program = load_program(path, (), library)
    if level is not None:
        program = translate_program(program, level, library).program
    errors = [d for d in check_program(program, library)
              if d.severity == DiagnosticSeverity.ERROR]
    assert not errors, errors
    function = program.main.functions[0]
    return build_facts(function, pipeline.check(program, library), library.get(function.hwd))


def facts_of(tmp_path: Path, source: str, library, name: str = "kernel.mcpl"):
    path = tmp_path / name
    path.write_text(source)
    return facts_at(path, None, library)


def about(messages, text: str, loop: str | None = None, code: str | None = None):
    """Messages about access `text` (in loop `loop`)."""
    found = [m for m in messages if m.text.startswith(text)
             and (loop is None or f" in loop {loop} " in m.text or f" in loop {loop}:" in m.text)
             and (code is None or m.code == code)]
    return found


def numbers(message) -> dict:
    return {k: v.numeric for k, v in message.values}


# ----------------------------------------------------------------------------- the paper


@pytest.fixture(scope="module")
def fermi_matmul(library):
    return facts_at(MATMUL, "fermi", library)


@pytest.fixture(scope="module")
def phi_matmul(library):
    return facts_at(MATMUL, "xeon_phi", library)


def test_runs_only_where_the_description_has_caches(library):
    names = {h: {a.name for a in applicable(library.get(h))} for h in
             ("perfect", "gpu", "nvidia", "fermi", "hopper", "xeon_phi", "x86_avx512")}
    assert "cache" not in names["perfect"] | names["gpu"] | names["nvidia"]
    assert all("cache" in names[h] for h in ("fermi", "hopper", "xeon_phi", "x86_avx512"))


def test_cache_oriented_only_where_caches_are_the_only_fast_memories(library):
    assert cache.is_cache_oriented(library.get("xeon_phi"))
    assert cache.is_cache_oriented(library.get("x86_avx512"))
    assert not cache.is_cache_oriented(library.get("fermi"))  # shared memory is on chip
    assert not cache.is_cache_oriented(library.get("hopper"))
    assert not cache.is_cache_oriented(library.get("nvidia"))  # no caches at all


def test_xeon_phi_matmul(phi_matmul):
    messages = cache.cache_messages(phi_matmul, SIZES)
    oriented = [m for m in messages if m.code == "cache-oriented"]
    # no cache message asks for a change here (b's lines are used whole, see below), so
    # the cache-oriented note is a fact, not a standing suggestion
    assert not [m for m in messages if m.severity == FeedbackSeverity.SUGGESTION]
    assert len(oriented) == 1 and oriented[0].severity == FeedbackSeverity.INFO
    assert "no access was found" in oriented[0].text
    # b[k, j] in loop k: a stride of a whole row, p line fetches (paper Table II); but the
    # 16 vector lanes load one line together and use all of it: nothing to change
    # (issue 11: reason per lock-step group).
    (b_k,) = about(messages, "b[k, j]", "k")
    assert b_k.code == "cache-no-benefit" and b_k.severity == FeedbackSeverity.INFO
    assert "use completely (coalesced)" in b_k.text and b_k.hint is None
    assert numbers(b_k)["worst_lines"] == numbers(b_k)["best_lines"] == 2048
    assert str(b_k.value_map["worst_lines"].symbolic) == "p"
    # a[i, k] benefits: 16 floats per 64 B line in loop k, one line for the 16 vectors.
    (a_k,) = about(messages, "a[i, k]", "k")
    assert a_k.code == "cache-benefits"
    assert numbers(a_k)["best_lines"] == 2048 // 16 and numbers(a_k)["worst_lines"] == 2048
    (a_v,) = about(messages, "a[i, k]", "vj")
    assert a_v.code == "cache-benefits" and numbers(a_v)["best_lines"] == 1
    assert not [m for m in about(messages, "a[i, k]") if m.code == "cache-no-benefit"
                and " in loop k " in m.text]


def test_xeon_phi_matmul_without_values_stays_symbolic(phi_matmul):
    messages = cache.cache_messages(phi_matmul, {})
    (b_k,) = about(messages, "b[k, j]", "k")
    worst = b_k.value_map["worst_lines"]
    assert str(worst.symbolic) == "p" and worst.numeric is None and worst.needs == ("p",)
    assert b_k.approximate  # the stride 4*m was assumed to be at least a line
    assert "4*m" in b_k.text


def test_fermi_matmul(fermi_matmul):
    messages = cache.cache_messages(fermi_matmul, SIZES)
    assert not [m for m in messages if m.code == "cache-oriented"]
    # b[k, j] in the blocks loop bi (n blocks): every block fetches its own line in the
    # worst case; in the best case the 8 blocks that share an SM's L1 share it (and the
    # 15 * 8 blocks that reach the L2).
    (b_bi,) = about(messages, "b[k, j]", "bi")
    values = numbers(b_bi)
    assert b_bi.code == "cache-may-benefit"
    assert values["best_lines"] == 2048 // 8 and values["worst_lines"] == 2048
    assert values["units_per_cache"] == 8
    assert values["best_lines_l2"] == -(-2048 // (15 * 8)) and values["worst_lines_l2"] == 2048
    assert str(b_bi.value_map["best_lines"].symbolic) == "ceiling(n/8)"
    # The 32 threads of a warp read 32 consecutive floats: one 128 B line.
    (b_t,) = about(messages, "b[k, j]", "ttj")
    assert b_t.code == "cache-benefits" and numbers(b_t)["best_lines"] == 1
    (b_k,) = about(messages, "b[k, j]", "k")
    assert b_k.code == "cache-no-benefit" and numbers(b_k)["worst_lines"] == 2048
    # a[i, k] in loop bi: a row apart, every block fetches its own lines.
    (a_bi,) = about(messages, "a[i, k]", "bi")
    assert a_bi.code == "cache-no-benefit" and numbers(a_bi)["worst_lines"] == 2048


def test_fermi_v1_halves_the_fetches_of_b_across_blocks(library):
    # Paper Table II, fermi -> fermi (v1): computing twice the elements per block halves
    # the line fetches of b[k, j] in loop bi (the kernels use 4 and 8 rows per block).
    def b_in_bi(path, level):
        messages = cache.cache_messages(facts_at(path, level, library), SIZES)
        (message,) = about(messages, "b[k, j]", "bi")
        return numbers(message)

    before = b_in_bi(ROOT / "kernels" / "matmul" / "nvidia_v1.mcpl", "fermi")
    after = b_in_bi(ROOT / "kernels" / "matmul" / "fermi_v1.mcpl", None)
    assert (before["worst_lines"], after["worst_lines"]) == (2048 // 4, 2048 // 8)
    assert (before["best_lines"], after["best_lines"]) == (2048 // 4 // 8, 2048 // 8 // 8)


def test_unpredictable_indices(tmp_path, library):
    facts = facts_at(ROOT / "kernels" / "spmv" / "perfect.mcpl", "xeon_phi", library)
    messages = cache.cache_messages(facts, {})
    (x,) = about(messages, "the cache behaviour of x[cols[k]]")
    assert x.code == "cache-unpredictable" and x.severity == FeedbackSeverity.WARNING
    assert "values of array cols" in x.text
    written = facts_of(tmp_path, """
x86_avx512 void shift(int n, main float[n] a, main float[n] b) {
  foreach (int t in n threads) {
    foreach (int v in 16 vectors) {
      int s = t;
      for (int k = 0; k < 4; k++) {
        s = s * 2 + 1;
        b[k] = a[s];
      }
    }
  }
}""", library)
    messages = cache.cache_messages(written, {"n": 64})
    (a,) = about(messages, "the cache behaviour of a[s]")
    assert "it depends on s, which is written in the kernel" in a.text
    assert about(messages, "b[k]", "k")  # b[k] itself is predictable


def test_temporary_arrays_are_related_to_the_caches(tmp_path, library):
    facts = facts_of(tmp_path, """
xeon_phi void rowcopy(int n, int p, dev float[n, p] a, dev float[n, p] c) {
  foreach (int t in n threads) {
    foreach (int v in 16 vectors) {
      dev float[p] bTemp;
      dev float[16] small;
      for (int k = 0; k < p; k++) {
        bTemp[k] = a[t, k];
      }
      for (int k = 0; k < p; k++) {
        c[t, k] = bTemp[k];
      }
      small[v] = 0.0;
    }
  }
}""", library)
    messages = [m for m in cache.cache_messages(facts, {"p": 2048, "n": 4})
                if m.code == "cache-temporary-size"]
    assert len(messages) == 1  # `small` has a fixed size that fits the caches
    (temp,) = messages
    assert temp.text.startswith("adjust the size of bTemp (4*p")
    assert "caches of 32 kB and 512 kB, line 64 B" in temp.text
    assert numbers(temp)["size_bytes"] == 4 * 2048
    big = [m for m in cache.cache_messages(facts, {"p": 65536, "n": 4})
           if m.code == "cache-temporary-size"]
    assert "does not fit in l1" in big[0].text


def test_a_temporary_counts_loops_from_its_declaration(tmp_path, library):
    facts = facts_of(tmp_path, """
xeon_phi void f(int n, dev float[n] out) {
  foreach (int t in n threads) {
    foreach (int v in 16 vectors) {
      for (int r = 0; r < 8; r++) {
        dev float[64] tmp;
        for (int k = 0; k < 64; k++) {
          tmp[k] = 1.0;
        }
        out[t] = tmp[r];
      }
    }
  }
}""", library)
    access = next(a for a in facts.accesses if a.binding.name == "tmp" and a.writes)
    assert [loop.name for loop in loops_since_declaration(access)] == ["k"]


# ----------------------------------------------------------------------------- brute force

# xeon_phi: 64 B lines, 16 vectors load in lock-step, 4 threads share a core's caches.
TEMPLATE = """
xeon_phi void f(int n, int m, dev float[n, m] a, dev float[n] out) {{
  foreach (int t in {threads} threads) {{
    foreach (int v in 16 vectors) {{
      float s = 0.0;
      for (int k = {start}; k < {stop}; k += {step}) {{
        s += a[{row}, {col}];
      }}
      out[t] = s;
    }}
  }}
}}"""


def lines(addresses: list[int]) -> int:
    return len({a // 64 for a in addresses})


def simulate(threads, start, stop, step, r, c):
    """Brute force: for every loop, the distinct lines of its access stream with the other
    loop variables fixed, for every way of fixing them and every placement of the array
    (its first element at any float-aligned offset in a line)."""
    ks = list(range(start, stop, step))
    vs = list(range(16))
    ts = list(range(threads))
    rows = [r(t, v, k) for t in ts for v in vs for k in ks]
    cols = [c(t, v, k) for t in ts for v in vs for k in ks]
    m = max(cols) + 1
    bases = range(0, 64, 4)

    def address(base, t, v, k):
        return base + (r(t, v, k) * m + c(t, v, k)) * 4

    per_loop = {
        "k": [lines([address(b, t, v, k) for k in ks]) for b in bases for t in ts for v in vs],
        "v": [lines([address(b, t, v, k) for v in vs]) for b in bases for t in ts for k in ks],
        # Threads share lines only with the (at most 4) threads on the same core's caches:
        # each group of 4 consecutive threads fetches its own.
        "t": [sum(lines([address(b, t, v, k) for t in ts[g:g + 4]])
                  for g in range(0, threads, 4)) for b in bases for v in vs for k in ks],
    }
    return per_loop, {"n": max(rows) + 1, "m": m}, {"k": len(ks), "v": 16, "t": threads}


CASES = [
    # (threads, start, stop, step, row, column) as MCPL text and as Python
    (2, 0, 20, 1, ("t", lambda t, v, k: t), ("k", lambda t, v, k: k)),
    (2, 0, 20, 1, ("k", lambda t, v, k: k), ("v", lambda t, v, k: v)),
    (3, 0, 9, 1, ("t", lambda t, v, k: t), ("v * 3 + k * 5", lambda t, v, k: v * 3 + k * 5)),
    (5, 1, 30, 3, ("k * 2 + t", lambda t, v, k: k * 2 + t), ("v", lambda t, v, k: v)),
    (4, 0, 40, 2, ("0", lambda t, v, k: 0), ("k + 16 * t", lambda t, v, k: k + 16 * t)),
    (6, 0, 7, 1, ("t", lambda t, v, k: t), ("v * 16 + k", lambda t, v, k: v * 16 + k)),
    (9, 0, 3, 1, ("k", lambda t, v, k: k), ("t * 2 + v", lambda t, v, k: t * 2 + v)),
]


def check_against_simulation(tmp_path, library, threads, start, stop, step, row, col):
    source = TEMPLATE.format(threads=threads, start=start, stop=stop, step=step,
                             row=row[0], col=col[0])
    facts = facts_of(tmp_path, source, library)
    per_loop, sizes, iterations = simulate(threads, start, stop, step, row[1], col[1])
    access = next(a for a in facts.accesses if a.binding.name == "a")
    caches = cached_spaces(facts.hwd)["dev"]
    results = cache.access_lines(facts, access, caches, sizes)
    assert not isinstance(results, cache.NoConstantStride)
    l1 = {r.loop.name: r for r in results if r.cache.node.name == "l1"}
    for name, counts in per_loop.items():
        r = l1[name]
        best = evaluate(r.best, sizes).numeric
        worst = evaluate(r.worst, sizes).numeric
        stride = evaluate(r.stride_bytes, sizes).numeric
        group = {"k": None, "v": 16, "t": 4}[name]
        # Several groups of units (4 threads per core) reach the best case together only
        # when each group starts on a line; one stream or one group always can.
        aligned = (group is None or iterations[name] <= group or stride == 0
                   or abs(stride) >= 64 or (group * stride) % 64 == 0)
        if aligned:
            assert best == min(counts), (name, source)
        else:
            assert best <= min(counts), (name, source)
        assert all(best <= c <= worst for c in counts), (name, source)
        if name == "v":  # lock-step units: the worst case is a group that straddles lines
            assert worst == max(counts), (name, source)
        else:
            assert worst == iterations[name]


@pytest.mark.parametrize("case", CASES)
def test_line_counts_match_a_brute_force_simulation(tmp_path, library, case):
    check_against_simulation(tmp_path, library, *case)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(threads=st.integers(1, 10), start=st.integers(0, 3), length=st.integers(1, 12),
       step=st.integers(1, 3), a=st.integers(0, 3), b=st.integers(0, 2), c=st.integers(0, 20),
       d=st.integers(0, 9), e=st.integers(0, 2))
def test_random_affine_indices_match_a_brute_force_simulation(
        tmp_path, library, threads, start, length, step, a, b, c, d, e):
    row = (f"k * {a} + t * {b}", lambda t, v, k: k * a + t * b)
    col = (f"v * {e} + k * {d} + t * {c}", lambda t, v, k: v * e + k * d + t * c)
    check_against_simulation(tmp_path, library, threads, start, start + length * step, step,
                             row, col)


def test_symbolic_best_case_agrees_with_evaluating_at_small_sizes(tmp_path, library):
    facts = facts_of(tmp_path, """
x86_avx512 void walk(int n, int p, main float[n, p] a, main float[n] out) {
  foreach (int t in n threads) {
    foreach (int v in 16 vectors) {
      float s = 0.0;
      for (int k = 0; k < p; k++) {
        s += a[t, k];
      }
      out[t] = s;
    }
  }
}""", library)
    access = next(a for a in facts.accesses if a.binding.name == "a")
    caches = cached_spaces(facts.hwd)["main"]
    (k_lines,) = [r for r in cache.access_lines(facts, access, caches, {})
                  if r.loop.name == "k" and r.cache.node.name == "l1"]
    assert k_lines.best.free_symbols and sympy.Symbol("p", integer=True, positive=True) \
        in k_lines.best.free_symbols
    for p in (1, 5, 16, 17, 100):
        assert evaluate(k_lines.best, {"p": p}).numeric == lines([k * 4 for k in range(p)])


# ----------------------------------------------------------------------------- overflow

# One thread's 16 vectors read a whole line of b per iteration of k; loop e reads the same
# elements again. Whether they come back from l1 (32 kB) depends on p lines fitting it.
OVERFLOW = """
xeon_phi void f(int n, int p, dev float[p, 16] b, dev float[n, 16] out) {{
  foreach (int t in n threads) {{
    foreach (int v in 16 vectors) {{
{body}
    }}
  }}
}}"""
AS_WRITTEN = """      for (int e = 0; e < 4; e++) {
        float s = 0.0;
        for (int k = 0; k < p; k++) {
          s += b[k, v];
        }
        out[t, v] = out[t, v] + s;
      }"""
BLOCKED = """      for (int kb = 0; kb < p; kb += 256) {
        for (int e = 0; e < 4; e++) {
          float s = 0.0;
          for (int k = kb; k < min(kb + 256, p); k++) {
            s += b[k, v];
          }
          out[t, v] = out[t, v] + s;
        }
      }"""


def lru_fetches(rows: list[int], capacity_lines: int) -> int:
    """Brute force: lines of b one core's l1 fetches for a stream of row indices (a row of
    16 floats is one 64 B line), fully associative, least recently used replaced."""
    cached: dict[int, None] = {}
    fetches = 0
    for row in rows:
        if row in cached:
            cached.pop(row)
        else:
            fetches += 1
            if len(cached) == capacity_lines:
                cached.pop(next(iter(cached)))
        cached[row] = None
    return fetches


@pytest.mark.parametrize("p", [256, 512, 1024])
def test_lines_that_overflow_l1_before_an_outer_loop_reuses_them(tmp_path, library, p):
    facts = facts_of(tmp_path, OVERFLOW.format(body=AS_WRITTEN), library)
    messages = about(cache.cache_messages(facts, {"p": p, "n": 4}), "b[k, v]", "k")
    stream = [k for _ in range(4) for k in range(p)]
    fetched = lru_fetches(stream, 32 * 1024 // 64)
    overflow = [m for m in messages if "more than l1 holds" in m.text]
    if p * 64 > 32 * 1024:
        # every use misses: loop e gains nothing from l1, as the message says
        assert fetched == 4 * p
        (msg,) = overflow
        assert msg.severity == FeedbackSeverity.SUGGESTION and msg.code == "cache-no-benefit"
        assert "loop e, which uses the same elements again" in msg.text
        assert numbers(msg)["footprint_bytes"] == 64 * p
    else:
        assert fetched == p  # p lines fit: loop e finds them in l1
        assert not overflow
        assert all(m.severity == FeedbackSeverity.INFO for m in messages)


def test_the_overflow_hint_blocks_the_loop_and_fetches_each_line_once(tmp_path, library):
    p = 1024
    blocked = [k for kb in range(0, p, 256) for _ in range(4)
               for k in range(kb, min(kb + 256, p))]
    assert lru_fetches(blocked, 32 * 1024 // 64) == p < 4 * p  # fewer lines, never more
    facts = facts_of(tmp_path, OVERFLOW.format(body=BLOCKED), library)
    messages = cache.cache_messages(facts, {"p": p, "n": 4})
    assert not [m for m in messages if "more than l1 holds" in m.text]
