"""The paper's feedback (Table II, sections 5 and 6.3) on the shipped kernels: issue 5's
acceptance criteria and the rows of feedback.md's "Expected results" available so far."""

from __future__ import annotations

import sympy
from conftest import KERNELS, by_code, feedback

MATMUL = KERNELS / "matmul" / "perfect.mcpl"
CONVOLUTION = KERNELS / "convolution" / "perfect.mcpl"
n, m, p = sympy.symbols("n m p", integer=True, positive=True)
h, fh = sympy.symbols("h fh", integer=True, positive=True)
SIZES = {"n": 2048, "m": 2048, "p": 2048}


def value(message, name):
    return message.value_map[name]


def test_matmul_perfect_operation_statistics():
    (summary,) = by_code(feedback(MATMUL), "opstats-summary")
    assert sympy.simplify(value(summary, "computational").symbolic - 2 * m * n * p) == 0
    assert sympy.simplify(value(summary, "data_accesses").symbolic - (2 * m * n * p + m * n)) == 0
    assert not summary.approximate
    assert "2*m*n*p" in summary.text and "2*m*n*p + m*n" in summary.text


def test_matmul_perfect_numbers_with_values():
    (summary,) = by_code(feedback(MATMUL, values=SIZES), "opstats-summary")
    assert value(summary, "computational").numeric == 2 * 2048**3
    assert value(summary, "data_accesses").numeric == 2 * 2048**3 + 2048**2


def test_perfect_has_no_transfers_and_no_several_elements_advice():
    codes = {msg.code for msg in feedback(MATMUL)}
    assert not any(c.startswith("transfers") for c in codes)
    assert "elements-several-per-unit" not in codes
    assert "memory-faster-space" not in codes  # perfect has no faster memory


def test_matmul_accelerator_transfers():
    messages = feedback(MATMUL, level="accelerator")
    (total,) = by_code(messages, "transfers-total")
    assert sympy.simplify(value(total, "bytes_in").symbolic - (4 * n * p + 4 * m * p)) == 0
    assert sympy.simplify(value(total, "bytes_out").symbolic - 4 * m * n) == 0
    per_param = {msg.text.split(":")[0]: msg for msg in by_code(messages, "transfers-parameter")}
    assert set(per_param) == {"a", "b", "c"}
    assert "host -> device" in per_param["a"].text and "device -> host" in per_param["c"].text
    # The operation statistics are the same as at perfect (translation only renames).
    (summary,) = by_code(messages, "opstats-summary")
    assert sympy.simplify(value(summary, "computational").symbolic - 2 * m * n * p) == 0


def test_transfer_time_at_the_interconnect_bandwidth():
    (total,) = by_code(feedback(MATMUL, level="accelerator", values=SIZES), "transfers-total")
    # 3 matrices of 2048^2 floats over pcie at 8 GB/s (accelerator.hdl: 64 Gbit/s)
    assert abs(value(total, "seconds").numeric - 3 * 4 * 2048**2 / 8e9) < 1e-12


def test_matmul_gpu_gives_the_three_messages_of_the_paper():
    messages = feedback(MATMUL, level="gpu", values=SIZES)
    # (1) a[i, k] loaded for nrThreadsM threads tj: local memory can be leveraged
    (local,) = by_code(messages, "memory-faster-space")
    assert local.text.startswith("a[i, k] loaded for nrThreadsM threads tj: local memory")
    # (2) b[k, j] is accessed for n blocks bi
    reuse = {msg.text.split(" is accessed")[0]: msg
             for msg in by_code(messages, "reuse-independent")}
    b = reuse["data reuse: b[k, j]"]
    assert "n (= 2,048) blocks bi" in b.text and value(b, "reuse").symbolic == n
    a = reuse["data reuse: a[i, k]"]
    assert "nrThreadsM (= 1,024) threads tj" in a.text and value(a, "reuse").numeric == 2048
    # (3) several elements of c per thread
    (several,) = by_code(messages, "elements-several-per-unit")
    assert "more than one element of c per thread" in several.text
    assert value(several, "units").numeric == 2048 * 2048
    # translation's `if (j < m)` is counted exactly: the counts stay exact at gpu
    (summary,) = by_code(messages, "opstats-summary")
    assert not summary.approximate
    assert sympy.simplify(value(summary, "computational").symbolic - 2 * m * n * p) == 0


def test_convolution_reuse_ratio_first_dimension():
    messages = feedback(CONVOLUTION, values={"h": 2048, "fh": 9})
    ratios = by_code(messages, "reuse-ratio")
    (first,) = [msg for msg in ratios if "dimension 1" in msg.text]
    ratio = value(first, "ratio")
    assert sympy.simplify(ratio.symbolic - h * fh / (h + fh - 1)) == 0
    assert round(ratio.numeric, 2) == 8.96
    assert "8.96" in first.text
    assert not first.approximate
    # the filter does not depend on the threads: simple form
    (f,) = [msg for msg in by_code(messages, "reuse-independent") if "f[y, x]" in msg.text]
    assert "h (= 2,048) threads i" in f.text and "w threads j" in f.text  # w not given


def test_gpu_v1_local_memory_message_disappears():
    messages = feedback(KERNELS / "matmul" / "gpu_v1.mcpl", values=SIZES)
    assert not [msg for msg in by_code(messages, "memory-faster-space") if "a[i, k]" in msg.text]
    texts = [msg.text for msg in by_code(messages, "reuse-independent")]
    assert any("b[k, j] is accessed for n (= 2,048) blocks bi" in t for t in texts)
    assert by_code(messages, "elements-several-per-unit")


def test_gpu_v2_b_independent_of_the_new_for_loop():
    messages = feedback(KERNELS / "matmul" / "gpu_v2.mcpl", values=SIZES)
    (b,) = [msg for msg in by_code(messages, "reuse-independent") if "b[k, j]" in msg.text]
    assert "for-loop ei" in b.text and "blocks bi" in b.text
    assert value(b, "reuse").numeric == 2048  # loaded n times in total
    assert not by_code(messages, "elements-several-per-unit")  # acted upon


def test_mic_reuse_and_several_elements_without_faster_memory():
    messages = feedback(MATMUL, level="mic", values=SIZES)
    texts = [msg.text for msg in by_code(messages, "reuse-independent")]
    assert any(t.startswith("data reuse: a[i, k]") for t in texts)
    assert any(t.startswith("data reuse: b[k, j]") for t in texts)
    assert not by_code(messages, "memory-faster-space")  # mic exposes no faster memory
    (several,) = by_code(messages, "elements-several-per-unit")
    assert "per vector" in several.text


def test_convolution_gpu_proposes_local_memory_for_both_inputs():
    messages = feedback(CONVOLUTION, level="gpu")
    proposals = {msg.text.split(" ")[0]: msg for msg in by_code(messages, "memory-faster-space")}
    # f is independent of the threads (first case); a is shared between neighbouring
    # threads in its second dimension (second case: pairs of loops per dimension)
    assert set(proposals) == {"f[y,", "a[i"}
    assert "dimension 2" in proposals["a[i"].text and "local memory" in proposals["a[i"].text
    # the split j = bj * nrThreadsW + tj with `if (j < w)` keeps the ratio exact
    (second,) = [msg for msg in by_code(messages, "reuse-ratio") if "dimension 2" in msg.text]
    fw, w = sympy.symbols("fw w", integer=True, positive=True)
    assert sympy.simplify(second.value_map["ratio"].symbolic - fw * w / (fw + w - 1)) == 0
    assert not second.approximate


def test_several_elements_not_advised_when_all_units_fit():
    assert by_code(feedback(MATMUL, level="mic", values={"n": 100, "m": 100}),
                   "elements-several-per-unit")
    assert not by_code(feedback(MATMUL, level="mic", values={"n": 2, "m": 16}),
                       "elements-several-per-unit")  # 32 vectors, 3,840 resident


def test_read_write_parameters_and_data_dependent_indices():
    histogram = feedback(KERNELS / "histogram" / "perfect.mcpl", level="accelerator")
    (hist,) = [msg for msg in by_code(histogram, "transfers-parameter")
               if msg.text.startswith("hist")]
    assert "host -> device" in hist.text and "device -> host" in hist.text  # atomicAdd: rw
    spmv = feedback(KERNELS / "spmv" / "perfect.mcpl")
    unpredictable = [msg.text for msg in by_code(spmv, "reuse-unpredictable")]
    assert any("x[cols[k]]" in t for t in unpredictable)
