"""mcl.backends: the registry (entry points of the group `mcl.backends`, and mcl's own
backends from the subpackages of mcl/backends where no metadata is installed) and the
protocol every registered backend meets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mcl.backends as registry
from mcl.backends import DEFAULT_BACKEND, backend_names, get_backend
from mcl.codegen.backend import Backend, ClusterBackend
from mcl.diagnostics import MclError
from mcl.hdl.library import default_library


@pytest.fixture
def fresh() -> Iterator[None]:
    """The registry's backends looked up again (get_backend keeps what it found)."""
    get_backend.cache_clear()
    yield
    get_backend.cache_clear()


def test_the_default_comes_first_then_the_others_by_name() -> None:
    names = backend_names()
    assert names[0] == DEFAULT_BACKEND
    assert list(names[1:]) == sorted(names[1:])
    assert {"opencl", "cuda"} <= set(names)


@pytest.mark.parametrize("name", backend_names())
def test_every_backend_meets_the_protocol(name: str) -> None:
    backend = get_backend(name)
    assert isinstance(backend, Backend)
    assert backend.name == name and backend.dialect.name == name
    assert backend.title and backend.help.startswith(name)


def test_without_installed_metadata_the_source_tree_backends_are_found(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # `python -m mcl` in a checkout that was never installed: no entry points at all.
    monkeypatch.setattr(registry, "_entry_point_values", dict)
    assert backend_names()[:1] == (DEFAULT_BACKEND,)
    assert get_backend("cuda").title == "CUDA"
    assert get_backend("opencl").dialect.suffix == ".cl"


def test_an_entry_point_adds_a_backend_and_is_checked(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Another distribution's entry point: listed, imported only when asked for, and
    # refused when the object is not a backend of the entry point's name.
    monkeypatch.setattr(registry, "_entry_point_values",
                        lambda: {"mine": "mcl.backends.opencl:backend"})
    assert "mine" in backend_names()
    with pytest.raises(MclError) as caught:
        get_backend("mine")
    assert caught.value.diagnostics[0].code == "backend-invalid"


def test_a_backend_that_cannot_be_loaded_says_so(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_entry_point_values",
                        lambda: {"gone": "mcl_no_such_package.backend:backend",
                                 "bare": "mcl.backends.opencl:no_such_object"})
    for name in ("gone", "bare"):
        with pytest.raises(MclError) as caught:
            get_backend(name)
        assert caught.value.diagnostics[0].code == "backend-import"


def test_an_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(MclError) as caught:
        get_backend("cdua")
    found = caught.value.diagnostics[0]
    assert found.code == "backend-unknown"
    assert "'cuda'" in (found.hint or "") and "opencl" in (found.hint or "")


def test_a_backend_supports_the_leaves_with_its_mapping() -> None:
    library = default_library()
    cuda, opencl = get_backend("cuda"), get_backend("opencl")
    assert cuda.supports(library.get("hopper")) and opencl.supports(library.get("hopper"))
    assert opencl.supports(library.get("x86_avx512"))
    assert not cuda.supports(library.get("x86_avx512"))


def test_the_registry_lists_names_without_importing_a_backend(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    imported: list[str] = []
    real = registry.importlib.import_module
    monkeypatch.setattr(registry.importlib, "import_module",
                        lambda name: imported.append(name) or real(name))
    backend_names()
    assert imported == []
    get_backend("cuda")
    assert imported == ["mcl.backends.cuda"]


def test_each_backend_says_what_its_devices_are_and_what_they_raise() -> None:
    """The device facts the measuring commands ask through the protocol (mcl report's
    `run` table key, its device errors), asked without opening a device where the
    backend has one kind."""
    assert get_backend("cuda").device_kind(object()) == "gpu"
    openmp = get_backend("openmp")
    assert openmp.device_kind(openmp.select_device(None)) == "cpu"
    assert get_backend("cuda").device_errors() == openmp.device_errors() == ()
    import pyopencl as cl

    assert get_backend("opencl").device_errors() == (cl.Error,)


def test_opencl_names_the_kind_of_a_device_by_its_type_bits() -> None:
    from types import SimpleNamespace

    import pyopencl as cl

    opencl = get_backend("opencl")
    for bits, kind in ((cl.device_type.GPU, "gpu"), (cl.device_type.CPU
                       | cl.device_type.DEFAULT, "cpu"), (cl.device_type.ACCELERATOR,
                       "accelerator"), (cl.device_type.CUSTOM, "other")):
        assert opencl.device_kind(SimpleNamespace(type=bits)) == kind


def test_only_the_opencl_backend_runs_on_a_cluster() -> None:
    """mcl.multi pins devices in workers through `ClusterBackend`; a backend without it is
    refused before any worker starts."""
    assert isinstance(get_backend("opencl"), ClusterBackend)
    assert not isinstance(get_backend("cuda"), ClusterBackend)
    assert not isinstance(get_backend("openmp"), ClusterBackend)


def test_nsight_compute_profiles_the_cuda_backend() -> None:
    from mcl.profile.ncu import profiled_backend

    assert [n for n in backend_names() if get_backend(n).profiler is not None] == ["cuda"]
    assert profiled_backend() == "cuda"


def test_the_register_counters_are_found_without_importing_a_backend(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA's counter (its `registers` module) is found in the source tree and through its
    entry point, loaded without the backend objects (which bring code generation and
    numpy), and asked in the backends' order; a counter that cannot be loaded counts
    nothing."""
    monkeypatch.setattr(registry, "_counters", registry._counters.__wrapped__)
    values = registry._counter_values()
    assert values["cuda"] == "mcl.backends.cuda.registers:register_count"
    assert set(values) == {"cuda"}
    imported: list[str] = []
    real = registry.importlib.import_module
    monkeypatch.setattr(registry.importlib, "import_module",
                        lambda name: imported.append(name) or real(name))
    from mcl.backends.cuda.registers import register_count

    assert registry._counters() == (register_count,)
    assert imported == ["mcl.backends.cuda.registers"]
    monkeypatch.setattr(registry, "_counter_values",
                        lambda: {"gone": "mcl_no_such_package:count", "cuda": values["cuda"],
                                 "zz": "tests.codegen.test_backends:_no_count"})
    first, last = registry._counters()
    assert first is register_count and last.__name__ == _no_count.__name__


def _no_count(facts: object) -> int | None:
    return None


def test_the_first_count_a_counter_gives_is_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_counters", lambda: (_no_count, lambda f: 40,
                                                        lambda f: 99))
    assert registry.register_count(object()) == 40  # type: ignore[arg-type]
    monkeypatch.setattr(registry, "_counters", lambda: (_no_count,))
    assert registry.register_count(object()) is None  # type: ignore[arg-type]
