"""What `mcl hwd detect --measure` found (mcl.detect.measure), as generate.py reads it.

The four roofs the description has always had stay plain numbers (bytes/s counting bytes
read and written; float32 flop/s); every measured figure is also in `rates` with its
spread and how it was measured, under these keys:

- `fma`: the peak kernel; `gemm`: the vendor library's SGEMM in the same run;
- `read`, `write`, `copy`: device memory (best over work-group counts);
  `library_copy`: numpy's (CPU) or PyTorch's (GPU) copy of the same size;
- `l1`, `l2`, `local`: read bandwidth of each cache level and of local memory, over all
  cores / compute units together;
- `latency_l1`, `latency_l2`, `latency_l3`, `latency_memory`, `latency_local`: seconds
  per dependent load (pointer chasing);
- `launch`: seconds an empty kernel takes on the device (start to end), `launch_wall`
  from enqueueing it to its finish on the host's clock;
- `to_device`, `from_device`: host<->device copies (GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcl.detect.timing import Rate


@dataclass(frozen=True)
class Measurements:
    copy_bytes_per_s: float | None = None
    fma_flops: float | None = None  # the compute roof: the larger of the peak and the library
    host_to_device: float | None = None
    device_to_host: float | None = None
    notes: dict[str, str] = field(default_factory=dict)  # how each was measured
    rates: dict[str, Rate] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # what the command reports beside the description
