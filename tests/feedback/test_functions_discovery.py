"""Finding and calling performance feedback functions (paper 6.5): next to the `.hdl`, in a
user's `--hwd-path` folder, through entry points; failures become warnings."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from user_hwd import KERNEL, user_hdl

from mcl import pipeline
from mcl.feedback.analyses import functions
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import analyse, applicable
from mcl.hdl.library import default_library, load_library
from mcl.mcpl.loader import load_program
from mcl.resources import hwdescs_dir

COUNT_LOADS = '''
def count_loads(kernel):
    loads = [i for i in kernel.instructions if i.kind == "load"]
    cores = kernel.hwd.value("cores.nr_units")
    threads = kernel.context.units("threads")
    return f"{len(loads)} loads for {threads} threads on {cores} cores"
'''


def user_setup(tmp_path: Path, function: str = "count_loads", module: str | None = COUNT_LOADS):
    folder = tmp_path / "hwd"
    folder.mkdir()
    (folder / "mydev.hdl").write_text(user_hdl(function))
    if module is not None:
        (folder / "mydev_feedback.py").write_text(textwrap.dedent(module))
    kernel = tmp_path / "add.mcpl"
    kernel.write_text(KERNEL)
    library = load_library([str(folder)])
    program = load_program(kernel, (), library)
    function_ast = program.main.functions[0]
    return library, program, function_ast


def run(tmp_path, values=None, **kwargs):
    library, program, function = user_setup(tmp_path, **kwargs)
    checked = pipeline.check(program, library)
    return analyse(function, checked, library.get("mydev"), values or {}, only=["functions"])


def test_a_user_description_brings_its_own_function(tmp_path):
    (message,) = run(tmp_path, {"n": 1000})
    assert message.text == "2 loads for 1000 threads on 4 cores"
    assert message.analysis == "functions" and message.code == "function-count_loads"
    assert message.function == "add" and message.span is not None


def test_the_functions_analysis_runs_only_where_a_function_is_named(tmp_path):
    library, _, _ = user_setup(tmp_path)
    assert "functions" in {a.name for a in applicable(library.get("mydev"))}
    assert "functions" not in {a.name for a in applicable(library.get("perfect"))}
    assert "functions" in {a.name for a in applicable(library.get("nvidia"))}


def test_a_missing_value_is_named(tmp_path):
    (message,) = run(tmp_path)
    assert message.severity == FeedbackSeverity.WARNING and message.code == "function-needs-values"
    assert "needs a value for n" in message.text and "-D n=" in message.hint


def test_a_missing_function_is_a_warning_that_says_where_it_looked(tmp_path):
    (message,) = run(tmp_path, function="no_such_function")
    assert message.severity == FeedbackSeverity.WARNING and message.code == "function-missing"
    assert "no_such_function" in message.text and "mydev_feedback.py" in message.hint


def test_a_broken_module_is_a_warning(tmp_path):
    (message,) = run(tmp_path, module="def count_loads(kernel):\n    return (\n")
    assert message.severity == FeedbackSeverity.WARNING and message.code == "function-module-error"
    assert "SyntaxError" in message.text


def test_a_failing_function_is_a_warning(tmp_path):
    module = "def count_loads(kernel):\n    return kernel.no_such_attribute\n"
    (message,) = run(tmp_path, module=module)
    assert message.severity == FeedbackSeverity.WARNING and message.code == "function-failed"
    assert "AttributeError" in message.text and "mydev.hdl" in message.text


def test_results_may_be_messages_lists_or_nothing(tmp_path):
    module = '''
    def count_loads(kernel):
        return [None, "", "one", kernel.message("two", severity="info", code="my-code")]
    '''
    messages = run(tmp_path, module=module)
    assert [m.text for m in messages] == ["one", "two"]
    assert messages[1].code == "my-code" and messages[1].severity == FeedbackSeverity.INFO


def test_entry_points_provide_functions(tmp_path, monkeypatch):
    class FakeEntryPoint:
        name = "count_loads"
        value = "fake:count_loads"

        def load(self):
            return lambda kernel: "from an installed package"

    def fake_entry_points(group):
        assert group == functions.ENTRY_POINT_GROUP
        return [FakeEntryPoint()]

    monkeypatch.setattr(functions, "entry_points", fake_entry_points)
    (message,) = run(tmp_path, module=None)
    assert message.text == "from an installed package"


def test_bundled_functions_live_next_to_their_descriptions():
    library = default_library()
    for hwd_name, function in (("nvidia", "shared_mem_parallelism"),
                               ("fermi", "load_store_optimality"), ("hopper", "occupancy")):
        hwd = library.get(hwd_name)
        named = dict(hwd.feedback_functions())
        assert function in named
        fn, searched = functions.find_function(function, hwd, named[function])
        assert callable(fn) and fn.__name__ == function
        assert searched[0] == str(hwdescs_dir() / f"{hwd_name}_feedback.py")


def test_a_block_reused_from_another_description_finds_its_module(tmp_path):
    library = default_library()
    nvidia = library.get("nvidia")
    name, node = nvidia.feedback_functions()[0]
    # A user description in another folder that reuses nvidia's SMP: the function is
    # found next to the file the naming block was written in.
    paths = functions.candidate_modules(
        type("Hwd", (), {"file": str(tmp_path / "mine.hdl"), "name": "mine"})(), node)
    assert paths == [tmp_path / "mine_feedback.py", hwdescs_dir() / "nvidia_feedback.py"]
    assert name == "shared_mem_parallelism"


@pytest.mark.parametrize("result", [42, object()])
def test_a_function_returning_something_else_is_reported(tmp_path, result):
    module = f"def count_loads(kernel):\n    return {result!r}\n" if result == 42 else \
        "def count_loads(kernel):\n    return object()\n"
    (message,) = run(tmp_path, module=module)
    assert message.code == "function-failed" and "returned" in message.text


def test_a_user_folder_naming_a_bundled_function_gets_the_bundled_one(tmp_path):
    # The original MCL's folder names shared_mem_parallelism without bringing a module.
    library, _, _ = user_setup(tmp_path, function="shared_mem_parallelism", module=None)
    hwd = library.get("mydev")
    name, node = hwd.feedback_functions()[0]
    fn, searched = functions.find_function(name, hwd, node)
    assert callable(fn) and fn.__name__ == "shared_mem_parallelism"
    assert searched[0] == str(tmp_path / "hwd" / "mydev_feedback.py")
    assert searched[-1] == str(hwdescs_dir() / "nvidia_feedback.py")


def test_the_bundled_function_runs_in_the_analysis(tmp_path, monkeypatch):
    import mcl.resources

    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "other_feedback.py").write_text(COUNT_LOADS)
    monkeypatch.setattr(mcl.resources, "hwdescs_dir", lambda: bundled)
    (message,) = run(tmp_path, {"n": 1000}, module=None)
    assert message.text == "2 loads for 1000 threads on 4 cores"


def test_a_user_module_still_wins_over_the_bundled_function(tmp_path):
    module = "def load_store_optimality(kernel):\n    return 'mine'\n"
    (message,) = run(tmp_path, function="load_store_optimality", module=module)
    assert message.text == "mine"


def test_a_missing_function_lists_the_bundled_modules_searched(tmp_path):
    (message,) = run(tmp_path, function="no_such_function", module=None)
    assert message.code == "function-missing"
    assert str(hwdescs_dir() / "fermi_feedback.py") in message.hint
