"""Settings for the whole test session."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_parse_cache(tmp_path_factory):
    """The tests (and the commands they start) keep their on-disk parse cache of
    descriptions and kernels (mcl.parse_cache) in a folder of their own, not in the
    user's ~/.cache."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv("MCL_CACHE_DIR", str(tmp_path_factory.mktemp("mcl-cache")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _register_counter():
    """The analyses count registers with NVRTC where they can, as the command line has
    them do (mcl.cli, mcl.feedback.compiler_registers): through the backends' registry.
    """
    from mcl.backends import register_count
    from mcl.feedback.compiler_registers import use_counter

    use_counter(register_count)
    yield
    use_counter(None)


@pytest.fixture(autouse=True)
def _no_instruction_counter():
    """The time model without the compiler's machine code (mcl.feedback.
    compiler_instructions), as in the editor: a test that wants it hands a counter
    itself; one that runs the command line in the process (which hands NVRTC's) leaves
    none behind for the next."""
    from mcl.feedback.compiler_instructions import use_counter

    use_counter(None)
    yield
    use_counter(None)


@pytest.fixture(autouse=True)
def _no_wide_copy_finder():
    """The coalescing without code generation's vector copies (mcl.feedback.
    compiler_vectors), as in the editor: a test that wants them hands a finder itself;
    one that runs the command line in the process leaves none behind for the next."""
    from mcl.feedback.compiler_vectors import use_finder

    use_finder(None)
    yield
    use_finder(None)


# The slow tier: modules that build and run generated code (OpenCL on PoCL, Oclgrind, the
# C++ harness, NVRTC), run whole refinement series, drive editors or fuzz. `pytest -m "not
# slow"` leaves them out (the fast tier); the whole suite runs them. One list, here.
SLOW_MODULES = (
    "tests/series/",
    "tests/oclgrind/",
    "tests/kernels/",
    "tests/tune/",
    "tests/multi/test_multi_run.py",
    "tests/multi/test_split_kernels.py",
    "tests/multi/test_multi_tune.py",
    "tests/fuzz/",
    "tests/codegen/test_codegen_cuda.py",
    "tests/codegen/test_codegen_cuda_cli.py",
    "tests/codegen/test_codegen_cuda_types.py",
    "tests/codegen/test_codegen_harness.py",
    "tests/codegen/test_codegen_sanitize.py",
    "tests/codegen/test_codegen_kernels.py",
    "tests/codegen/test_codegen_tunable.py",
    "tests/feedback/test_brute_force.py",
    "tests/interp/test_interp_kernels.py",
    "tests/compat/test_user_types.py",
    "tests/lsp/test_neovim.py",
    "tests/test_demo.py",
    "tests/test_quickstart.py",
)
# Single tests of fast modules that took 40 s or more each in the fast tier's run of
# benchmarks/results/2026-12-07-fast-tier-r13.txt (`--durations=60`): a node id (with its
# parameters where only some are slow). tests/test_slow_tier.py checks that each names a test.
SLOW_TESTS = (
    "tests/mcpl/test_statement_reuse.py::test_random_edits_give_the_whole_file_parse"
    "[spmv/hopper_v17.mcpl]",
    "tests/mcpl/test_statement_reuse.py::test_random_edits_give_the_whole_file_parse"
    "[matmul/hopper_v4.mcpl]",
    "tests/lsp/test_reused_dummies.py::"
    "test_code_edits_of_matmul_give_the_feedback_of_fresh_dummies",
    "tests/lsp/test_check_reuse.py::"
    "test_code_edits_give_the_diagnostics_of_a_check_that_reuses_nothing[hopper_v17.mcpl]",
    "tests/refine/test_refine_search.py::"
    "test_a_version_verified_against_the_reference_is_not_run_on_its_cases_again",
    "tests/refine/test_tile_2d.py::test_each_thread_computes_a_tile_of_c",
    "tests/refine/test_tile_2d.py::test_the_verifier_catches_a_block_that_covers_half_its_tile",
    "tests/refine/test_tile_2d.py::test_a_smaller_block_holds_a_larger_tile",
    "tests/feedback/test_conflict_classes.py::"
    "test_generated_tiles_classes_give_the_full_walks_survey",
    "tests/ncu_profile/test_profile_cli.py::test_a_series_folder",
)


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if path.startswith(SLOW_MODULES) or item.nodeid in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def whole_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text output as wide as it comes (a wide $COLUMNS): for the tests that read a
    message or a row from one line; tests/test_output_width.py tests the wrapping."""
    monkeypatch.setenv("COLUMNS", "100000")
