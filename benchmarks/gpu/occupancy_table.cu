// Produces tests/feedback/data/hopper_occupancy.json: the ground truth for mcl's `occupancy`
// performance feedback function (hwdescs/hopper), measured with CUDA's own occupancy
// calculator on a real Hopper GPU.
//
// For kernels compiled with different register budgets (__maxnreg__), and for a grid of
// threads-per-block and dynamic shared memory per block, it records
// cudaOccupancyMaxActiveBlocksPerMultiprocessor together with the kernel's actual register
// count (cudaFuncGetAttributes.numRegs) and static shared memory.
//
// Build and run (on the GPU machine):
//   nvcc -O2 -arch=sm_90 -o occ benchmarks/gpu/occupancy_table.cu && ./occ > hopper_occupancy.json
#include <cstdio>
#include <cuda_runtime.h>

// A kernel with K live accumulators, so that register use grows with K up to the cap.
template <int K>
__device__ void body(float *out, const float *in, int n) {
    float acc[K];
#pragma unroll
    for (int k = 0; k < K; ++k) acc[k] = in[(threadIdx.x + k) % n];
    for (int it = 0; it < n; ++it) {
#pragma unroll
        for (int k = 0; k < K; ++k) acc[k] = acc[k] * in[(it + k) % n] + acc[(k + 1) % K];
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < K; ++k) s += acc[k];
    extern __shared__ float dyn[];
    if (n < 0) dyn[threadIdx.x] = s;  // touch dynamic shared memory (never taken)
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

#define KERNEL(NAME, K, R) \
    __global__ void __maxnreg__(R) NAME(float *o, const float *i, int n) { body<K>(o, i, n); }

KERNEL(k_r16, 2, 16)
KERNEL(k_r32, 8, 32)
KERNEL(k_r40, 12, 40)
KERNEL(k_r64, 32, 64)
KERNEL(k_r72, 40, 72)
KERNEL(k_r96, 64, 96)
KERNEL(k_r128, 96, 128)
KERNEL(k_r168, 140, 168)
KERNEL(k_r255, 240, 255)

typedef void (*kfun)(float *, const float *, int);

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    struct { const char *name; kfun f; } kernels[] = {
        {"k_r16", k_r16}, {"k_r32", k_r32}, {"k_r40", k_r40}, {"k_r64", k_r64}, {"k_r72", k_r72},
        {"k_r96", k_r96}, {"k_r128", k_r128}, {"k_r168", k_r168}, {"k_r255", k_r255}};
    const int threads[] = {32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
    const int smem_kb[] = {0, 1, 4, 12, 16, 33, 48, 64, 100, 113, 160, 227};
    printf("{\n  \"device\": \"%s\",\n  \"cc\": \"%d.%d\",\n  \"sms\": %d,\n", prop.name, prop.major,
           prop.minor, prop.multiProcessorCount);
    printf("  \"regs_per_sm\": %d,\n  \"smem_per_sm\": %zu,\n  \"smem_per_block_optin\": %zu,\n",
           prop.regsPerMultiprocessor, prop.sharedMemPerMultiprocessor,
           prop.sharedMemPerBlockOptin);
    printf("  \"reserved_smem_per_block\": %zu,\n", prop.reservedSharedMemPerBlock);
    printf("  \"command\": \"nvcc -O2 -arch=sm_90 -o occ benchmarks/gpu/occupancy_table.cu && ./occ\",\n");
    printf("  \"cases\": [\n");
    bool first = true;
    for (auto &k : kernels) {
        cudaFuncAttributes attr;
        cudaFuncGetAttributes(&attr, k.f);
        cudaFuncSetAttribute(k.f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)prop.sharedMemPerBlockOptin - (int)attr.sharedSizeBytes);
        for (int t : threads) {
            if (t > attr.maxThreadsPerBlock) continue;
            for (int s : smem_kb) {
                size_t dyn = (size_t)s * 1024;
                if (dyn + attr.sharedSizeBytes > prop.sharedMemPerBlockOptin) continue;
                int blocks = -1;
                cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.f, t, dyn);
                if (e != cudaSuccess) { cudaGetLastError(); continue; }
                printf("%s    {\"kernel\": \"%s\", \"threads\": %d, \"regs\": %d, \"smem\": %zu, "
                       "\"blocks\": %d}",
                       first ? "" : ",\n", k.name, t, attr.numRegs, dyn + attr.sharedSizeBytes,
                       blocks);
                first = false;
            }
        }
    }
    printf("\n  ]\n}\n");
    return 0;
}
