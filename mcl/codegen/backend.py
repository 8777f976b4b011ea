"""What mcl asks of a backend: the kernel language it generates, the leaves it can
generate for, how its kernels are compiled and run, its devices and its host harness
(docs/codegen.md, "Backends").

Code generation itself is shared (paper section 7: the leaf's mapping file says how the
programming abstractions become constructs of the target language; the emitter's
structure is the same for every language): `mcl.codegen` lowers a leaf-level program to
kernel source with the words of the backend's `Dialect`, after reading the leaf's
`<leaf>.<name>.toml` in the backend's `MappingVocabulary`, and to launch plans
(`GeneratedModule`). A backend supplies what differs: the spellings, its lowering
(`emit`: the shared emitter, or a subclass of it) and the check after it
(`check_source`), and everything that needs a device or a compiler.
Nothing outside a backend's own package branches on its name: commands and libraries look
a backend up in the registry (`mcl.backends.get_backend`) and call it.

A backend without an accelerator fits as well: one that compiles C with the system
compiler and calls it in the same process lists one host device, runs sessions through
`ctypes`, and writes a C harness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mcl.codegen.dialect import Dialect
    from mcl.codegen.mapping import OpenCLMapping
    from mcl.codegen.opencl import CodegenInput
    from mcl.codegen.plan import GeneratedModule
    from mcl.codegen.session import RunResult
    from mcl.diagnostics import Diagnostic
    from mcl.hdl.model import HardwareDescription


@dataclass(frozen=True)
class MappingVocabulary:
    """The words of a backend's mapping file (`<leaf>.<name>.toml`, mcl.codegen.mapping),
    each mapped to the word of mcl's mapping model (whose words are OpenCL's: roles
    work-group, work-item, global, loop; address spaces global, local, constant,
    private; barriers local, global, local+global)."""

    roles: Mapping[str, str]
    address_spaces: Mapping[str, str]
    barriers: Mapping[str, str]
    # Whether `codegen.lanes` (a par_group's units as the components of vectors) is
    # generated.
    lanes: bool = False
    # Where the file may name the leaf's architecture (`arch`, CUDA's "sm_90"): what is
    # wrong with a value (None: nothing). None: the file has no `arch`.
    arch: Callable[[object], str | None] | None = None
    # Where a leaf has no `<leaf>.<name>.toml`: another source of its mapping data and
    # the file it came from, or None (OpenCL reads the original MCL's
    # codegen/<leaf>.lisp); `fallback_hint` ends the error's hint where neither exists.
    fallback: Callable[[HardwareDescription], tuple[dict, str] | None] | None = None
    fallback_hint: str = ""


@dataclass(frozen=True)
class TunerTarget:
    """How Kernel Tuner runs this backend's kernels on a device (`mcl tune`): its
    `lang` and its platform and device numbers."""

    lang: str
    platform: int = 0
    device: int = 0


@dataclass(frozen=True)
class DeviceListing:
    """One device as `mcl devices` lists it: the `--device` specs that pick it, its kind
    (gpu, cpu, accelerator), name and platform, and notes ("bundled with mcl")."""

    specs: tuple[str, ...]
    kind: str
    name: str
    platform: str
    notes: tuple[str, ...] = field(default=())
    default: bool = False  # used without --device
    spec_titles: tuple[str, ...] = ()  # the column title of each spec ("N", "P:D")


@dataclass(frozen=True)
class DeviceSlot:
    """A worker process of a multi-device run (mcl.multi.cluster) to start: the device it
    serves and the environment that makes that device the process's default one
    (`select_device(None)` there)."""

    label: str  # as `mcl devices` lists it
    env: dict[str, str]
    name: str = ""  # as `mcl run` reports it (and a .tuned.toml names it)


@runtime_checkable
class Harness(Protocol):
    """The host program `mcl codegen` writes for a generated module."""

    def files(self) -> dict[str, str]:
        """File name -> contents (the kernel file among them)."""
        ...


@runtime_checkable
class Session(Protocol):
    """A generated module built for one device; runs any of its functions
    (mcl.codegen.session.SessionBase implements the flow for device APIs)."""

    def run(self, function: str, args: dict[str, Any], repeat: int = 1,
            kept: dict[str, Any] | None = None) -> RunResult: ...

    def device_name(self) -> str: ...


@runtime_checkable
class Backend(Protocol):
    """A target language and the means to build and run it. Registered under the entry
    point group `mcl.backends` (`mcl.backends.get_backend`); the entry point's name is
    the backend's `name`."""

    # The registry key, the value of --backend / --lang, and the middle of the leaf's
    # mapping file name `<leaf>.<name>.toml`.
    name: str
    # The language's name in messages and headers ("OpenCL", "CUDA").
    title: str
    # The spellings of the kernel language the emitter asks for (suffix of the kernel
    # file included: dialect.suffix).
    dialect: Dialect
    # The words of the backend's mapping files.
    vocabulary: MappingVocabulary
    # What --backend / --lang say of it: "opencl (default: pyopencl, any OpenCL device)".
    help: str
    # The vendor profiler that measures this backend's kernels by its counters (`mcl
    # profile`: "ncu", Nsight Compute), or None.
    profiler: str | None

    # ------------------------------------------------------------------ leaves
    def supports(self, hwd: HardwareDescription) -> bool:
        """Whether code can be generated for leaf `hwd`: it has this backend's mapping."""
        ...

    # ------------------------------------------------------------------ lowering stages
    # Optional, so not a member here (a runtime-checkable protocol would refuse the
    # backends without it): `lowering_passes`, a tuple of mcl.codegen.passes.LoweringPass
    # that run after the shared ones (mcl.codegen.passes.LOWERING), each CheckedProgram ->
    # CheckedProgram and dumpable with MCL_DUMP=after:NAME (docs/codegen.md, "Passes").

    def emit(self, source: CodegenInput, hwd: HardwareDescription, mapping: OpenCLMapping,
             only: set[str] | None = None) -> GeneratedModule:
        """Kernel source and launch plans of the kernel functions of `source` (those named
        in `only`, where given) at leaf `hwd` with its `mapping` (from `load_mapping`):
        mcl.codegen.opencl.ModuleEmitter with this backend's dialect, or a subclass of
        it, which prints the text from its C syntax tree (mcl.codegen.ctree)."""
        ...

    def check_source(self, generated: GeneratedModule, source_file: str | None
                     ) -> list[Diagnostic]:
        """Errors the backend's compiler would give that are better reported at the MCPL
        line (`source_file`: the MCPL file), before anything is built."""
        ...

    # ------------------------------------------------------------------ devices
    def select_device(self, spec: str | None, preferred_type: str | None = None) -> Any:
        """The device `--device SPEC` names (None: the default; `preferred_type` is the
        leaf mapping's `device_type`); an MclError with the choices when none matches."""
        ...

    def describe(self, device: Any) -> str:
        """The device as runs report it and `.tuned.toml` files name it."""
        ...

    def devices(self) -> list[DeviceListing]:
        """Every device of this backend, for `mcl devices`."""
        ...

    def device_kind(self, device: Any) -> str:
        """gpu, cpu, accelerator or other: the kind of `device` (the key of a series'
        `run` table, what a leaf mapping's `device_type` names)."""
        ...

    def device_errors(self) -> tuple[type[BaseException], ...]:
        """What the backend's runtime raises when a device cannot build or run a kernel
        (out of resources, too much local memory): a fact about the device, shown as
        such (`mcl report`), not a bug. Empty where the backend reports these as
        MclError."""
        ...

    # ------------------------------------------------------------------ compile and run
    def compile(self, generated: GeneratedModule, device: Any,
                options: tuple[str, ...] = ()) -> Any:
        """The generated kernels built for `device` with compiler `options` (a program,
        module or library handle); MclError when the compiler refuses them."""
        ...

    def session(self, generated: GeneratedModule, device: Any = None,
                options: tuple[str, ...] = (), queue: Any = None) -> Session:
        """A session that runs `generated` on `device` (None: the default device);
        `queue` is a device-API queue to share where the backend has them."""
        ...

    def tuner_target(self, device: Any) -> TunerTarget:
        """Kernel Tuner's language and device numbers for `device` (`mcl tune`)."""
        ...

    # ------------------------------------------------------------------ host program
    def harness(self, generated: GeneratedModule) -> Harness:
        """The host program of `mcl codegen` (paper 4.4: code for setting up the
        execution on the device, to include in applications)."""
        ...


@runtime_checkable
class ClusterBackend(Backend, Protocol):
    """A backend whose kernels run on a Dask cluster of one worker process per device
    (`mcl run --devices`, `mcl tune --parallel`; mcl.multi): it says how to pin each
    device in a worker and how a worker keeps its device open."""

    def worker_slots(self, specs: Sequence[str] | None, preferred_type: str | None
                     ) -> list[DeviceSlot]:
        """A worker per device that `specs` name (`--device` specs; a device may be named
        more than once and its workers share it), or, for None, per device of
        `preferred_type` (all devices where none is of that type)."""
        ...

    def hold_device(self, device: Any) -> Any:
        """A handle that keeps `device`'s driver started while it is held, so that a
        worker's first task does not pay the driver's start (NVIDIA's CUDA driver
        initialisation)."""
        ...
