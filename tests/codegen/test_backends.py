"""mcl.backends: the registry (entry points of the group `mcl.backends`, and mcl's own
backends from the subpackages of mcl/backends where no metadata is installed) and the
protocol every registered backend meets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mcl.backends as registry
from mcl.backends import DEFAULT_BACKEND, backend_names, get_backend
from mcl.codegen.backend import Backend
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
