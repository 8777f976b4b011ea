"""The backend a cluster of devices runs (mcl.multi.cluster starts its workers, and
mcl.multi.worker opens each one's device with it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcl.diagnostics import MclError, error

if TYPE_CHECKING:
    from mcl.codegen.backend import ClusterBackend


def cluster_backend() -> ClusterBackend:
    """The backend whose kernels the cluster runs: the default one (mcl.backends), which
    must say how to pin a device in a worker (mcl.codegen.backend.ClusterBackend)."""
    from mcl.backends import default_backend
    from mcl.codegen.backend import ClusterBackend

    backend = default_backend()
    if not isinstance(backend, ClusterBackend):
        raise MclError(error("run-devices-backend", f"the {backend.title} backend cannot "
                             "run on a cluster of devices", hint="leave out --devices "
                             "and --scheduler"))
    return backend
