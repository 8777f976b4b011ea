"""The library: user folders (--hwd-path, MCL_HWD_PATH), shadowing, caching, the graph."""

from __future__ import annotations

import os

import pytest

from mcl.diagnostics import MclError
from mcl.hdl import library as L
from tests.hdl.broken import MINI, write


def test_graph_queries(lib):
    assert lib.parent("fermi") == "nvidia" and lib.parent("perfect") is None
    assert lib.children("nvidia") == ["fermi", "hopper"]
    assert lib.is_leaf("x86_avx512") and not lib.is_leaf("cpu")
    assert lib.ancestors("fermi") == ["perfect", "accelerator", "gpu", "nvidia"]
    assert "fermi" in lib and "nope" not in lib and len(lib) == 10
    assert [h.name for h in lib][:2] == ["perfect", "accelerator"]
    assert lib["gpu"] is lib.get("gpu")


def test_unknown_description_suggests(lib):
    with pytest.raises(MclError) as info:
        lib.get("fermy")
    assert info.value.diagnostics[0].hint == "did you mean 'fermi'?"


def test_path_only_goes_down(lib):
    assert lib.path("cpu", "x86_avx512") == ["cpu", "x86_avx512"]
    assert lib.path("gpu", "gpu") == ["gpu"]
    with pytest.raises(MclError) as info:
        lib.path("fermi", "perfect")
    assert info.value.diagnostics[0].code == "hdl-no-path"
    with pytest.raises(MclError):
        lib.path("perfect", "nothing")


def test_user_folder_adds_descriptions(tmp_path):
    write(tmp_path, MINI)
    lib = L.load_library([tmp_path], use_env=False)
    assert lib.parent("mini") == "perfect" and "mini" in lib.children("perfect")


def test_single_file_on_the_path(tmp_path):
    path = write(tmp_path, MINI)
    assert "mini" in L.load_library([path], use_env=False)


def test_environment_variable(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    write(tmp_path, MINI)
    write(other, MINI.replace("mini", "midi"), "midi")
    monkeypatch.setenv(L.ENV_VAR, os.pathsep.join([str(tmp_path), str(other)]))
    lib = L.load_library()
    assert {"mini", "midi"} <= set(lib.names())
    assert "mini" not in L.load_library(use_env=False)
    assert "mini" in L.default_library()


def test_default_library_is_cached(monkeypatch):
    monkeypatch.delenv(L.ENV_VAR, raising=False)
    assert L.default_library() is L.default_library()


def test_user_description_shadows_bundled_one_with_a_warning(tmp_path):
    bundled = (L.hwdescs_dir() / "gpu.hdl").read_text()
    assert "nr_units = 32;              // Fig. 8 line 25" in bundled
    write(tmp_path, bundled.replace("nr_units = 32;              // Fig. 8 line 25",
                                    "nr_units = 64;  //"), "gpu")
    lib = L.load_library([tmp_path], use_env=False)
    assert [w.code for w in lib.warnings] == ["hdl-shadowed"]
    assert lib.get("gpu").value("processors.processor.alus.nr_units").value == 64
    # nvidia reuses gpu.processors.processor.alus (Fig. 13): it now sees the user's version.
    assert lib.get("nvidia").value("smps.smp.alus.nr_units").value == 64


def test_stale_environment_entry_is_only_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv(L.ENV_VAR, str(tmp_path / "gone"))
    lib = L.load_library()
    assert [w.code for w in lib.warnings] == ["hdl-path"] and len(lib) == 10
