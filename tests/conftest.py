"""Settings for the whole test session."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_parse_cache(tmp_path_factory):
    """The tests (and the commands they start) keep their on-disk HDL parse cache
    (mcl.hdl.parse_cache) in a folder of their own, not in the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv("MCL_CACHE_DIR", str(tmp_path_factory.mktemp("mcl-cache")))
        yield
