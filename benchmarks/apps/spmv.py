"""CSR sparse matrix times dense vector (the paper's section 7): y = A x, A of nrows x
ncols with nnz non-zeros (kernels/spmv/reference.py generates A)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "spmv"
UNIT = "GFLOP/s"
# Two rows per size: non-zeros placed uniformly, and kernels/spmv/reference.py's power-law
# row lengths in a band (the paper's Mip1-like case: a few very long rows).
INPUTS = (None, "powerlaw")


def sizes(device_type: str) -> list[dict[str, int]]:
    """10^6 rows x 20 non-zeros per row on a GPU (issue 14's cuSPARSE figures); 2 x 10^5
    rows on the CPU. Each size runs with both input kinds (INPUTS)."""
    if device_type == "gpu":
        return [{"nrows": 1_000_000, "ncols": 1_000_000, "nnz": 20_000_000}]
    return [{"nrows": 200_000, "ncols": 200_000, "nnz": 4_000_000}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """A multiply and an add per non-zero; each non-zero's value and column read once,
    rowptr, x and y once (x may be read more than once: that is the kernel's cost)."""
    nrows, ncols, nnz = defines["nrows"], defines["ncols"], defines["nnz"]
    return {"flop": 2.0 * nnz, "bytes": 8.0 * nnz + 4.0 * (nrows + 1) + 4.0 * ncols + 4.0 * nrows}


def _csr_parts(args: dict[str, object]) -> tuple[object, object, object, object, int, int]:
    return (args["rowptr"], args["cols"], args["vals"], args["x"], int(args["nrows"]),  # type: ignore[call-overload]
            int(args["ncols"]))  # type: ignore[call-overload]


def _scipy(args: dict[str, object]) -> Callable[[], object]:
    import numpy as np
    import scipy.sparse

    rowptr, cols, vals, x, nrows, ncols = _csr_parts(args)
    a = scipy.sparse.csr_matrix((np.asarray(vals), np.asarray(cols), np.asarray(rowptr)),
                                shape=(nrows, ncols))
    xv = np.asarray(x)
    return lambda: a @ xv


def _torch_csr(args: dict[str, object]) -> Callable[[], object]:
    """cuSPARSE SpMV through torch's sparse CSR tensor (int32 indices, float32)."""
    import torch

    rowptr, cols, vals, x, nrows, ncols = _csr_parts(args)
    a = torch.sparse_csr_tensor(torch.from_numpy(rowptr).cuda(),  # type: ignore[arg-type]
                                torch.from_numpy(cols).cuda(),  # type: ignore[arg-type]
                                torch.from_numpy(vals).cuda(),  # type: ignore[arg-type]
                                size=(nrows, ncols))
    xv = torch.from_numpy(x).cuda()  # type: ignore[arg-type]
    return lambda: torch.mv(a, xv)


def _cupy_csr(args: dict[str, object]) -> Callable[[], object]:
    import cupy
    import cupyx.scipy.sparse

    rowptr, cols, vals, x, nrows, ncols = _csr_parts(args)
    a = cupyx.scipy.sparse.csr_matrix((cupy.asarray(vals), cupy.asarray(cols),
                                       cupy.asarray(rowptr)), shape=(nrows, ncols))
    xv = cupy.asarray(x)
    return lambda: a @ xv


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("cuSPARSE (torch sparse CSR mv)", _torch_csr),
                Peer("cuSPARSE (cupyx.scipy.sparse)", _cupy_csr)]
    return [Peer("scipy.sparse csr @ x", _scipy)]
