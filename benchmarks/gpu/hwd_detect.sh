#!/bin/bash
# `mcl hwd detect` on an NVIDIA GPU machine (docs/hdl.md, "Bring your own machine"):
# detect the GPU (OpenCL through NVIDIA's ICD, CUDA through cuda-bindings) with --measure,
# compare the description with hwdescs/hopper.hdl figure by figure, translate every
# shipped hopper version to it and run them verified there, and measure the peers of its
# measured peaks in the same run (PyTorch device copy and float32 matrix product).
# Then the same for the host CPU through PoCL: detect with --measure, matmul and
# convolution verified on it, and its measured roofs against numpy copy and OpenBLAS
# SGEMM (benchmarks/hwd_detect_peers.py). Writes into $OUT (default ./hwd-detect-out):
#   detected_gpu.hdl detected_gpu.opencl.toml gpu_query.json compare.md
#   detected_cpu.hdl cpu_query.json log.txt
set -u
OUT=${OUT:-./hwd-detect-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
PY=${PY:-python3}
WORK=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv
$PY -m mcl devices
$PY -m mcl hwd detect --device nvidia -o "$WORK" --name detected_gpu --measure \
    --save-query "$OUT/gpu_query.json" --force
cp "$WORK/detected_gpu.hdl" "$WORK/detected_gpu.opencl.toml" "$OUT/"
$PY -m mcl hwd show detected_gpu --hwd-path "$WORK" | head -40
$PY benchmarks/hwd_compare.py hopper detected_gpu --hwd-path "$WORK" | tee "$OUT/compare.md"
pass=0; fail=0
for f in kernels/*/hopper_v*.mcpl; do
    if $PY -m mcl run "$f" --level detected_gpu --target detected_gpu --device nvidia --verify \
        --hwd-path "$WORK" > "$WORK/run.txt" 2>&1; then
        pass=$((pass + 1)); echo "PASS $f: $(tail -1 "$WORK/run.txt")"
    else
        fail=$((fail + 1)); echo "FAIL $f"; tail -15 "$WORK/run.txt"
    fi
done
echo "hopper versions on the detected description: $pass passed, $fail failed"
$PY - <<'PEER'
import torch
torch.backends.cuda.matmul.allow_tf32 = False
x = torch.empty(256 << 18, dtype=torch.float32, device="cuda"); y = torch.empty_like(x)
def best(f, n=5):
    f(); torch.cuda.synchronize(); ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
    return min(ts)
print(f"peer: torch device copy {2 * x.numel() * 4 / best(lambda: y.copy_(x)) / 1e9:.1f} GB/s")
n = 8192; a = torch.rand(n, n, device="cuda"); b = torch.rand(n, n, device="cuda")
print(f"peer: torch float32 matmul (no TF32) {2 * n ** 3 / best(lambda: a @ b) / 1e12:.2f} TFLOP/s")
PEER
$PY -m mcl hwd detect --device portable -o "$WORK/cpu" --name detected_cpu --measure \
    --save-query "$OUT/cpu_query.json"
cp "$WORK/cpu/detected_cpu.hdl" "$OUT/"
for k in matmul convolution; do
    $PY -m mcl run "kernels/$k/perfect.mcpl" --level detected_cpu --target detected_cpu \
        --device portable --verify --hwd-path "$WORK/cpu" 2>&1 | tail -1
done
$PY benchmarks/hwd_detect_peers.py --device portable --rounds 3
