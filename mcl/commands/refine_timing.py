"""`mcl refine --measure`, the search's `Timer` (made here, by the command, since it
times as `mcl report --run` does): each kept candidate run on a device, as `mcl run
--target` runs a kernel (code generated from the leaf by the backend, OpenCL or CUDA;
the median kernel time of `repeat` runs), on inputs made once by the kernel's numpy reference at
the search's sizes; its outputs are compared with the reference's, so a version that the
interpreter verified but the device computes wrongly is not kept.

Without a reference the inputs are random numbers of the parameters' types (as the
interpreter's verification makes them) and the time alone is taken: the outputs were
verified by the interpreter against the original."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mcl.diagnostics import MclError
from mcl.quiet_threads import wait_until_quiet
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.search import Measured
from mcl.refine.verification import SEED, random_inputs
from mcl.verify import (
    Reference,
    expected_outputs,
    load_reference,
    make_inputs,
    verify,
)

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary


@dataclass
class DeviceTimer:
    """Times versions of one kernel on one device (the search's `Timer`)."""

    target: str
    library: HwdLibrary
    backend: str
    device: Any
    repeat: int = 5
    reference: Reference | None = None
    args: dict[str, Any] = field(default_factory=dict)
    expected: Any = None

    @classmethod
    def open(cls, start: KernelAtLevel, target: str, backend: str, device_spec: str | None,
             repeat: int) -> DeviceTimer:
        """The device of `backend` for leaf `target` (`--device`, default the backend's:
        PoCL's CPU device for OpenCL) and the inputs at the start's sizes."""
        from mcl.backends import leaf_device

        device = leaf_device(backend, start.library.get(target), device_spec)
        path = start.reference
        reference = load_reference(path) if path.is_file() else None
        timer = cls(target, start.library, backend, device, repeat, reference)
        sizes = {k: int(v) for k, v in start.values.items() if isinstance(v, int)}
        if reference is not None:
            _, timer.args = make_inputs(reference, sizes, SEED)
            timer.expected = expected_outputs(reference, timer.args)
        else:
            timer.args = random_inputs(start, sizes)
        return timer

    @property
    def device_name(self) -> str:
        from mcl.backends import get_backend

        return str(get_backend(self.backend).describe(self.device))

    def __call__(self, kernel: KernelAtLevel) -> Measured:
        from mcl.report.measure import device_errors, prepare_session

        session, problem = prepare_session(kernel.source.program, kernel.function,
                                           self.target, self.library, self.device,
                                           backend=self.backend)
        if session is None:
            return Measured(None, self.device_name, problem)
        args = _copies(self.args)
        # numpy's BLAS (the reference's product) spins its workers a while after a call:
        # a CPU device timed then shares its cores with them (mcl.quiet_threads)
        wait_until_quiet()
        try:
            result = session.run(kernel.function, args, self.repeat)
        except MclError as exc:
            return Measured(None, self.device_name, exc.diagnostics[0].message.splitlines()[0])
        except device_errors() as exc:
            return Measured(None, self.device_name, f"the device refused to run it: {exc}")
        if self.reference is not None:
            bad = [c for c in verify(self.reference, self.expected, result.outputs, args)
                   if not c.ok]
            if bad:
                return Measured(None, self.device_name, "its outputs differ from the "
                                f"reference on the device: {bad[0].name}: {bad[0].note}")
        return Measured(result.kernel_time_s, self.device_name)


def _copies(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
