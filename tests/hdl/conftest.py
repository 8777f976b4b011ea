"""Fixtures for the HDL tests: the bundled library, loaded once per session."""

from __future__ import annotations

import pytest

from mcl.hdl.library import HwdLibrary, load_library


@pytest.fixture(scope="session")
def lib() -> HwdLibrary:
    return load_library(use_env=False)
