"""2-D convolution (the paper's section 7): a 4096 x 4096 image, a 9 x 9 filter; b is the
filter-weighted mean of each window (kernels/convolution/reference.py)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "convolution"
UNIT = "GFLOP/s"


def sizes(device_type: str) -> list[dict[str, int]]:
    """The paper's size on every device."""
    return [{"h": 4096, "w": 4096, "fh": 9, "fw": 9}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """A multiply and an add per filter tap and one division per output (the reference's
    flops); bytes: a and f read once, b written once."""
    h, w, fh, fw = defines["h"], defines["w"], defines["fh"], defines["fw"]
    return {"flop": float(h * w * (2 * fh * fw + 1)),
            "bytes": 4.0 * ((h + fh - 1) * (w + fw - 1) + h * w + fh * fw)}


def _scaled_filter(args: dict[str, object]) -> object:
    import numpy as np

    f = np.asarray(args["f"], dtype=np.float32)
    return f / np.float32(f.size)  # the kernel's mean folded into the weights


def _scipy(args: dict[str, object]) -> Callable[[], object]:
    """scipy.ndimage.correlate over the padded image; its output at the centre of each
    window (index fh // 2, fw // 2 for any filter size) is b."""
    import numpy as np
    from scipy import ndimage

    a, f = np.asarray(args["a"]), _scaled_filter(args)
    h, w, fh, fw = (int(args[k]) for k in ("h", "w", "fh", "fw"))  # type: ignore[call-overload]

    def run() -> object:
        out = ndimage.correlate(a, f, mode="constant")
        return out[fh // 2: fh // 2 + h, fw // 2: fw // 2 + w]

    return run


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    """Vectorised numpy: the sum of fh * fw shifted, scaled slices of a."""
    import numpy as np

    a, f = np.asarray(args["a"]), np.asarray(_scaled_filter(args))
    h, w, fh, fw = (int(args[k]) for k in ("h", "w", "fh", "fw"))  # type: ignore[call-overload]
    out = np.empty((h, w), dtype=np.float32)
    term = np.empty_like(out)

    def run() -> object:
        out.fill(0.0)
        for y in range(fh):
            for x in range(fw):
                np.multiply(a[y: y + h, x: x + w], f[y, x], out=term)
                np.add(out, term, out=out)
        return out

    return run


def _cudnn(args: dict[str, object]) -> Callable[[], object]:
    """cuDNN through torch.nn.functional.conv2d (a cross-correlation, as the kernel), FP32
    with TF32 off, one image and one channel."""
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # let cuDNN pick its fastest algorithm
    a = torch.from_numpy(args["a"]).cuda()[None, None]  # type: ignore[arg-type]
    f = torch.from_numpy(_scaled_filter(args)).cuda()[None, None]  # type: ignore[arg-type]
    return lambda: torch.nn.functional.conv2d(a, f)


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("cuDNN conv2d (torch, no TF32)", _cudnn)]
    return [Peer("scipy.ndimage.correlate", _scipy), Peer("numpy shifted slices", _numpy)]
