"""The registry of backends: the kernel languages mcl generates and the means to build and
run them (the protocol: mcl.codegen.backend; docs/codegen.md, "Backends").

    get_backend(name) -> Backend     the backend of --backend / --lang NAME
    load_mapping(hwd, language=...)  the leaf's mapping to that backend
    generate_module(checked, ...)    code generation with the leaf's mapping to a backend
    emit_harness(generated)          the host program of the module's backend
    backend_names() -> tuple[str]    every backend, the default first (command-line choices)
    leaf_device(name, hwd, spec)     the device of --device SPEC to run leaf hwd's code on
    open_session(generated, device)  a session of the module's backend on that device
    register_count(facts)            a backend compiler's registers per thread for a kernel

A backend is found two ways, and a name found both ways is the entry point's:
  - an entry point of the group `mcl.backends` in an installed distribution (its name is
    the backend's name, its value `package.module:object`), read as mcl reads its other
    groups (mcl.plugins: kept on disk, read again when packages change). mcl's own
    backends are listed in its pyproject.toml, so another package adds one the same way;
  - a subpackage of this package with a `backend` object (mcl/backends/opencl/, ...):
    mcl's own, found also where mcl runs from a source tree without installed metadata
    (`python -m mcl` in a checkout). Its name is the subpackage's.
Backends are imported only when asked for: listing the names imports none of them.

A backend whose compiler can count a kernel's registers without a device (CUDA's NVRTC)
offers a register counter for the occupancy feedback, found the same two ways: an entry
point of the group `mcl.register_counters` (its name the backend's), or a module
`registers` with a function `register_count` in a backend subpackage. The counter is a
module of its own, not a member of the backend object, because it is asked during a
feedback check, which must not pay for importing code generation and numpy where no
count comes (a leaf without the backend's mapping). The machine code of each source line,
for the time model's instruction-issue term, is found the same way, from a backend
subpackage's module `line_instructions` (bundled backends only: no entry-point group).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, did_you_mean, error

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from mcl.codegen.backend import Backend, Harness, Session
    from mcl.codegen.host_eval import Number
    from mcl.codegen.mapping import OpenCLMapping
    from mcl.codegen.plan import GeneratedModule
    from mcl.feedback.facts.kernel import KernelFacts
    from mcl.hdl.library import HwdLibrary
    from mcl.hdl.model import HardwareDescription
    from mcl.mcpl.checked import CheckedProgram

GROUP = "mcl.backends"
COUNTER_GROUP = "mcl.register_counters"
# The module of a backend subpackage that holds its register counter, and the function.
COUNTER_MODULE, COUNTER_FUNCTION = "registers", "register_count"
# The module of a backend subpackage that lists the machine code of each source line.
LINES_MODULE, LINES_FUNCTION = "line_instructions", "line_instructions"
# The backend of commands run without --backend / --lang.
DEFAULT_BACKEND = "opencl"


def _entry_point_values() -> dict[str, str]:
    """name -> `module:object` of the installed entry points of GROUP."""
    from mcl.plugins import found

    return dict(found()[GROUP])


def _bundled() -> dict[str, str]:
    """name -> `module:object` of the backend subpackages of this package."""
    return {m.name: f"{__name__}.{m.name}:backend" for m in pkgutil.iter_modules(__path__)
            if m.ispkg}


def _values() -> dict[str, str]:
    return {**_bundled(), **_entry_point_values()}


def _bundled_modules(module: str, function: str) -> dict[str, str]:
    """backend name -> `module:function` of each backend subpackage that has `module`
    (listed without importing them)."""
    return {m.name: f"{__name__}.{m.name}.{module}:{function}"
            for m in pkgutil.iter_modules(__path__) if m.ispkg
            and any(sub.name == module for sub in pkgutil.iter_modules(
                [f"{path}/{m.name}" for path in __path__]))}


def _counter_values() -> dict[str, str]:
    """backend name -> `module:function` of each register counter: the backend
    subpackages' COUNTER_MODULE, then the entry points of COUNTER_GROUP."""
    from mcl.plugins import found

    return {**_bundled_modules(COUNTER_MODULE, COUNTER_FUNCTION),
            **dict(found()[COUNTER_GROUP])}


def _loaded(values: Mapping[str, str]) -> tuple[Callable[[KernelFacts], Any], ...]:
    """The functions named by `values` (backend name -> `module:function`), in the order
    of `backend_names`; one that cannot be loaded gives nothing (the feedback estimates
    instead), as a missing compiler does."""
    order = {name: i for i, name in enumerate(backend_names())}
    loaded = []
    for _, value in sorted(values.items(),
                           key=lambda kv: (order.get(kv[0], len(order)), kv[0])):
        module_name, _, attribute = value.partition(":")
        try:
            loaded.append(getattr(importlib.import_module(module_name), attribute))
        except (ImportError, AttributeError):
            continue
    return tuple(loaded)


@cache
def _counters() -> tuple[Callable[[KernelFacts], int | None], ...]:
    """The register counters."""
    return _loaded(_counter_values())


@cache
def _line_counters() -> tuple[Callable[[KernelFacts], Any], ...]:
    """The backends' listings of the machine code per source line."""
    return _loaded(_bundled_modules(LINES_MODULE, LINES_FUNCTION))


def line_instructions(facts: KernelFacts) -> Any:
    """The machine code of each source line of the function of `facts` that a backend's
    compiler gives without a device (mcl.feedback.compiler_instructions.Lines), or None:
    the time model's instruction counter (mcl.feedback.compiler_instructions)."""
    for counter in _line_counters():
        lines = counter(facts)
        if lines is not None:
            return lines
    return None


def register_count(facts: KernelFacts) -> int | None:
    """The registers per thread a backend's compiler gives the function of `facts`: the
    first count a backend's register counter gives, or None (the occupancy feedback's
    counter, mcl.feedback.compiler_registers)."""
    for counter in _counters():
        count = counter(facts)
        if count is not None:
            return count
    return None


def backend_names() -> tuple[str, ...]:
    """The name of every backend, the default first, then by name."""
    names = sorted(_values())
    if DEFAULT_BACKEND in names:
        names.remove(DEFAULT_BACKEND)
        names.insert(0, DEFAULT_BACKEND)
    return tuple(names)


@cache
def get_backend(name: str) -> Backend:
    """The backend called `name`; an MclError that lists the backends otherwise."""
    values = _values()
    value = values.get(name)
    if value is None:
        hint = did_you_mean(name, list(values))
        raise MclError(error(
            "backend-unknown", f"there is no backend '{name}'",
            hint=(hint + "; " if hint else "") + "backends: " + ", ".join(backend_names())))
    module_name, _, attribute = value.partition(":")
    try:
        found: object = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else ():
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise MclError(error(
            "backend-import", f"the backend '{name}' ({value}) cannot be loaded: {exc}",
            hint="install what it needs, or the package that provides it again")) from exc
    from mcl.codegen.backend import Backend

    if not isinstance(found, Backend) or found.name != name:
        raise MclError(error(
            "backend-invalid", f"the backend '{name}' ({value}) is not a backend of that "
            "name", hint="a backend implements mcl.codegen.backend.Backend (docs/codegen.md, "
            "\"Backends\") and its entry point's name is its `name`"))
    return found


def default_backend() -> Backend:
    return get_backend(DEFAULT_BACKEND)


def load_mapping(hwd: HardwareDescription, path: Path | None = None,
                 language: str = DEFAULT_BACKEND) -> OpenCLMapping:
    """The mapping of leaf `hwd` to the backend called `language` (mcl.codegen.mapping)."""
    from mcl.codegen.mapping import read_mapping

    return read_mapping(hwd, get_backend(language), path)


def parse_mapping(data: dict, file: str, hwd: HardwareDescription | None = None,
                  language: str = DEFAULT_BACKEND) -> OpenCLMapping:
    """The TOML data of a mapping file, validated in the words of backend `language`."""
    from mcl.codegen.mapping import parse_mapping as parse

    return parse(data, file, get_backend(language), hwd)


def generate_module(checked: CheckedProgram, target: str, library: HwdLibrary,
                    mapping: OpenCLMapping | None = None, only: set[str] | None = None,
                    overrides: Mapping[str, Number] | None = None,
                    language: str | None = None) -> GeneratedModule:
    """mcl.codegen.opencl.generate_module with the leaf's mapping to the backend called
    `language` (default DEFAULT_BACKEND) where no `mapping` is given."""
    from mcl.codegen.opencl import generate_module as generate

    if mapping is None:
        mapping = load_mapping(library.get(target), language=language or DEFAULT_BACKEND)
    return generate(checked, target, library, mapping, only, overrides)


def emit_harness(generated: GeneratedModule) -> Harness:
    """The host program of `generated` as its backend writes it."""
    return get_backend(generated.language).harness(generated)


def leaf_device(name: str, hwd: HardwareDescription, spec: str | None) -> Any:
    """The device of backend `name` that `--device spec` names, to run code generated for
    leaf `hwd` (`--device auto`: the type its mapping prefers), after reading the leaf's
    mapping, so that a leaf without one is reported before any driver is asked."""
    mapping = load_mapping(hwd, language=name)
    return get_backend(name).select_device(spec, mapping.device_type)


def open_session(generated: GeneratedModule, device: Any = None,
                 options: tuple[str, ...] = (), queue: Any = None) -> Session:
    """`generated` built on `device` by the backend of its language, ready to run."""
    return get_backend(generated.language).session(generated, device, options, queue)


__all__ = ["COUNTER_GROUP", "DEFAULT_BACKEND", "GROUP", "backend_names", "default_backend",
           "emit_harness", "generate_module", "get_backend", "leaf_device", "load_mapping",
           "open_session", "parse_mapping", "register_count"]
