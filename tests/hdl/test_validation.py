"""One deliberately broken description per load-time error of hdl.md §4 (and a few more):
each is reported with file, line, column, the offending name and a helpful hint."""

from __future__ import annotations

import pytest

from mcl.diagnostics import MclError, Severity
from mcl.hdl.library import load_library
from tests.hdl.broken import MINI, broken, errors_of, line_of, load, write


def the_error(errors, code):
    found = [e for e in errors if e.code == code]
    assert found, [str(e) for e in errors]
    return found[0]


def test_the_base_description_is_valid(tmp_path):
    write(tmp_path, MINI)
    lib = load(tmp_path)
    assert lib.get("mini").executing_unit().name == "thread"
    assert lib.warnings == []


def test_misspelled_reference_names_the_closest_block(tmp_path):
    errors = broken(tmp_path, "perfect.ic;", "perfect.icc;")
    e = the_error(errors, "hdl-unknown-reference")
    assert "perfect.icc" in e.message and "'icc'" in e.message
    assert e.hint == "did you mean 'ic'?"
    assert (e.span.file, e.span.line, e.span.column) == (
        str(tmp_path / "mini.hdl"), line_of(MINI, "perfect.ic;"), 3)


def test_misspelled_local_reference(tmp_path):
    e = the_error(broken(tmp_path, "  mem;\n", "  mme;\n"), "hdl-unknown-reference")
    assert "'mme'" in e.message and e.hint == "did you mean 'mem'?"


def test_misspelled_description_in_qualified_reference(tmp_path):
    e = the_error(broken(tmp_path, "perfect.ic;", "perfet.ic;"), "hdl-unknown-reference")
    assert "'perfet'" in e.message and "'perfect'" in e.hint


def test_reference_to_a_missing_nested_block(tmp_path):
    old = "  par_group threads {\n    max_nr_units = unlimited;\n    par_unit thread {\n" \
          "      memory_space reg { default; }\n    }\n  }"
    e = the_error(broken(tmp_path, old, "  perfect.hierarchy.threads.thred;"),
                  "hdl-unknown-reference")
    assert "'thred'" in e.message and e.hint == "did you mean 'thread'?"


def test_parent_description_not_found(tmp_path):
    e = the_error(broken(tmp_path, "specializes perfect;", "specializes perfekt;"),
                  "hdl-unknown-parent")
    assert "'perfekt'" in e.message and e.hint == "did you mean 'perfect'?"
    assert (e.span.line, e.span.column, e.span.end_column) == (2, 13, 20)


def test_cycle_in_specializes(tmp_path):
    write(tmp_path, MINI.replace("specializes perfect;", "specializes other;"))
    write(tmp_path, MINI.replace("mini", "other").replace("specializes perfect;",
                                                          "specializes mini;"), "other")
    e = the_error(errors_of(tmp_path), "hdl-cycle")
    assert "mini -> other -> mini" in e.message
    assert e.span is not None and e.span.line == 2


def test_missing_parallelism_block(tmp_path):
    start = MINI.index("parallelism hierarchy")
    end = MINI.index("device mini")
    write(tmp_path, MINI[:start] + MINI[end:])
    e = the_error(errors_of(tmp_path), "hdl-missing-parallelism")
    assert "'mini'" in e.message and e.span.line == 1


def test_missing_device_block(tmp_path):
    text = MINI.replace("device mini {", "device other {") + "\ndevice spare {\n}\n"
    write(tmp_path, text)
    e = the_error(errors_of(tmp_path), "hdl-missing-device")
    assert "device mini" in e.message and "'other'" in e.hint


def test_single_device_with_another_name_is_only_a_warning(tmp_path):
    write(tmp_path, MINI.replace("device mini {", "device family {"))
    lib = load(tmp_path)
    (w,) = lib.warnings
    assert w.severity == Severity.WARNING and w.code == "hdl-device-name"
    assert lib.get("mini").device.name == "family"


def test_par_group_without_count(tmp_path):
    e = the_error(broken(tmp_path, "    max_nr_units = unlimited;\n", ""), "hdl-missing-count")
    assert "par_group 'threads'" in e.message
    assert (e.span.line, e.span.column) == (line_of(MINI, "par_group threads"), 13)


def test_execution_group_without_count(tmp_path):
    e = the_error(broken(tmp_path, "  nr_units = 4;\n", ""), "hdl-missing-count")
    assert "execution_group 'cores'" in e.message


@pytest.mark.parametrize(
    ("old", "new", "shown"),
    [
        ("max_nr_units = unlimited;", "max_nr_units = 0;", "0"),
        ("max_nr_units = unlimited;", "max_nr_units = 7 / 2;", "3.5"),
        ("nr_units = 4;", "nr_units = 0;", "0"),
    ],
)
def test_unit_counts_are_whole_and_at_least_one(tmp_path, old, new, shown):
    # A group of 0 or 3.5 units used to load; translation then divides by such counts.
    e = the_error(broken(tmp_path, old, new), "hdl-bad-value")
    prop = new.split(" =")[0]
    assert e.message == f"{prop} must be a whole number of at least 1, not {shown}"
    assert e.span.line == line_of(MINI, old)


@pytest.mark.parametrize(
    ("new", "shown"),
    [
        ("capacity = 48 kB; nr_banks = 0;", "nr_banks must be a whole number of at least 1, "
                                              "not 0"),
        ("capacity = 48 kB; nr_banks = 5 / 2;", "nr_banks must be a whole number of at least "
                                                 "1, not 2.5"),
        ("capacity = 48 kB; cache_line_size = 0 B;", "cache_line_size must be a whole number "
                                                      "of at least 1, not 0"),
        ("capacity = 48 kB; bandwidth = 0 GB/s;", "bandwidth must be more than 0: the time of "
                                                   "every transfer over it is divided by it"),
    ],
)
def test_what_the_analyses_divide_by_is_more_than_zero(tmp_path, new, shown):
    # A bandwidth of 0 loaded, and the feedback of every kernel at the level ended in an
    # internal error (a complex infinity in the roofline, a division by zero in the time
    # model); banks and line sizes are divided by as well.
    old = "capacity = 48 kB;"
    e = the_error(broken(tmp_path, old, new), "hdl-bad-value")
    assert e.message == shown
    assert e.span.line == line_of(MINI, old)


def test_a_small_or_unlimited_bandwidth_loads(tmp_path):
    for rate in ("1 bit/s", "unlimited bit/s"):
        write(tmp_path, MINI.replace("capacity = 48 kB;",
                                     f"capacity = 48 kB; bandwidth = {rate};"))
        assert load(tmp_path).get("mini") is not None


def test_space_naming_no_memory_space(tmp_path):
    e = the_error(broken(tmp_path, "space(main);", "space(mian);"), "hdl-unknown-space")
    assert "'mian'" in e.message and e.hint == "did you mean 'main'?"
    assert (e.span.line, e.span.column) == (line_of(MINI, "space(main)"), 3)


def test_slots_naming_no_par_unit(tmp_path):
    e = the_error(broken(tmp_path, "slots(thread, 1);\n    load", "slots(thred, 1);\n    load"),
                  "hdl-unknown-par-unit")
    assert "'thred'" in e.message and e.hint == "did you mean 'thread'?"


def test_cache_without_line_size(tmp_path):
    # A warning and a default since issue 19 (the original toolchain accepted it):
    # tests/compat/test_user_libraries.py.
    write(tmp_path, MINI.replace("memory mem {", "cache mem {"))
    lib = load(tmp_path)
    [w] = [w for w in lib.warnings if w.code == "hdl-cache-line"]
    assert "'mem'" in w.message and "cache_line_size" in w.hint


def test_unknown_unit_suffix(tmp_path):
    e = the_error(broken(tmp_path, "48 kB", "48 KB"), "hdl-unknown-unit")
    assert "'KB'" in e.message and "'kB'" in e.hint
    assert (e.span.line, e.span.column) == (line_of(MINI, "48 kB"), 17)


def test_unit_of_the_wrong_dimension(tmp_path):
    e = the_error(broken(tmp_path, "48 kB", "48 MHz"), "hdl-unit-mismatch")
    assert "capacity" in e.message and "'MHz'" in e.message


def test_two_blocks_of_the_same_name_in_one_scope(tmp_path):
    errors = broken(tmp_path, "memory_space main { default; }",
                    "memory_space main { default; }\n  memory_space main { }")
    e = the_error(errors, "hdl-duplicate-block")
    assert "'main'" in e.message and e.span.line == line_of(MINI, "memory_space main") + 1


def test_two_top_level_blocks_of_the_same_name(tmp_path):
    e = the_error(broken(tmp_path, "memory mem {", "memory cores { }\nmemory mem {"),
                  "hdl-duplicate-block")
    assert "'cores'" in e.message


def test_property_stated_twice(tmp_path):
    e = the_error(broken(tmp_path, "  capacity = 48 kB;",
                         "  capacity = 48 kB;\n  capacity = 4 kB;"),
                  "hdl-duplicate-property")
    assert "'capacity'" in e.message


def test_syntax_error_is_a_diagnostic(tmp_path):
    e = the_error(broken(tmp_path, "max_nr_units = unlimited;", "max_nr_units = unlimited"),
                  "hdl-syntax")
    assert e.span.line == line_of(MINI, "par_unit thread") and e.span.column == 5
    assert "'par_unit'" in e.message and "';'" in e.hint


def test_syntax_error_for_a_keyword_as_identifier(tmp_path):
    e = the_error(broken(tmp_path, "memory mem {", "memory cache {"), "hdl-syntax")
    assert "'cache'" in e.message


def test_file_name_must_match(tmp_path):
    write(tmp_path, MINI, "maxi")
    e = the_error(errors_of(tmp_path), "hdl-file-name")
    assert "'maxi.hdl'" in e.message and "mini" in e.hint


def test_second_par_group_in_one_scope(tmp_path):
    errors = broken(tmp_path, "  par_group threads {",
                    "  par_group more {\n    nr_units = 2;\n    par_unit one { }\n  }\n"
                    "  par_group threads {")
    e = the_error(errors, "hdl-second-par_group")
    assert "'threads'" in e.message and "'more'" in e.hint


def test_hierarchy_without_par_group(tmp_path):
    old = "  par_group threads {\n    max_nr_units = unlimited;\n    par_unit thread {\n" \
          "      memory_space reg { default; }\n    }\n  }"
    e = the_error(broken(tmp_path, old, ""), "hdl-missing-par_group")
    assert e.span.line == line_of(MINI, "parallelism hierarchy")


def test_par_group_with_two_par_units(tmp_path):
    e = the_error(broken(tmp_path, "    par_unit thread {",
                         "    par_unit extra { }\n    par_unit thread {"),
                  "hdl-second-par_unit")
    assert "'thread'" in e.message


def test_block_in_the_wrong_place(tmp_path):
    e = the_error(broken(tmp_path, "      memory_space reg { default; }",
                         "      memory_space reg { default; }\n      memory regs { }"),
                  "hdl-misplaced-block")
    assert "memory 'regs'" in e.message


def test_property_in_the_wrong_place(tmp_path):
    e = the_error(broken(tmp_path, "  capacity = 48 kB;",
                         "  capacity = 48 kB;\n  cache_line_size = 64 B;"),
                  "hdl-misplaced-property")
    assert "'cache_line_size'" in e.message and "cache" in e.hint


def test_cyclic_reference(tmp_path):
    errors = broken(tmp_path, "  execution_unit core {\n", "  execution_unit core {\n    cores;\n")
    e = the_error(errors, "hdl-cyclic-reference")
    assert "'cores'" in e.message


def test_execution_unit_without_slots(tmp_path):
    e = the_error(broken(tmp_path, "load_store_unit lsu { slots(thread, 1); }",
                         "load_store_unit lsu { }"), "hdl-missing-slots")
    assert "'lsu'" in e.message


def test_connects_naming_no_block(tmp_path):
    base = MINI + "interconnect link {\n  connects(mem, corez.core[*]);\n}\n"
    e = the_error(broken(tmp_path, "  perfect.ic;\n", "  perfect.ic;\n  link;\n", base),
                  "hdl-unknown-reference")
    assert "corez.core[*]" in e.message and "cores.core" in e.hint
    written = base.replace("  perfect.ic;\n", "  perfect.ic;\n  link;\n", 1)
    assert e.span.line == line_of(written, "corez")


def test_child_with_more_units_than_parent(tmp_path):
    # Appendix A.2 'from less than to': gpu allows at most 1024 threads per block.
    child = MINI.replace("mini", "tiny").replace("specializes perfect;", "specializes gpu;")
    child = child.replace("memory_space main { default; }", "memory_space dev { default; }")
    child = child.replace("space(main);", "space(dev);")
    child = child.replace("  par_group threads {\n    max_nr_units = unlimited;",
                          "  par_group blocks {\n    max_nr_units = 65535;\n    par_unit block {\n"
                          "    memory_space local { }\n  par_group threads {\n    nr_units = 2048;")
    child = child.replace("      memory_space reg { default; }\n    }\n  }",
                          "      memory_space reg { default; }\n    }\n  }\n  }\n  }")
    child = child.replace("slots(thread, 1);\n    load",
                          "slots(thread, 1);\n  slots(block, 1);\n    load")
    write(tmp_path, child, "tiny")
    e = the_error(errors_of(tmp_path), "hdl-not-equivalent")
    assert "from less than to" in e.message and "'threads'" in e.message
    assert e.span.file.endswith("tiny.hdl")


def test_child_dropping_a_memory_space(tmp_path):
    e = the_error(broken(tmp_path, "      memory_space reg { default; }", ""), "hdl-not-equivalent")
    assert "'reg'" in e.message and "par_unit 'thread'" in e.message


def test_a_missing_folder(tmp_path):
    with pytest.raises(MclError) as info:
        load_library([tmp_path / "nowhere"], use_env=False)
    assert info.value.diagnostics[0].code == "hdl-path"


def test_errors_come_together_sorted_by_place(tmp_path):
    text = MINI.replace("space(main);", "space(mian);").replace("48 kB", "48 KB")
    write(tmp_path, text)
    errors = errors_of(tmp_path)
    assert {e.code for e in errors} >= {"hdl-unknown-space", "hdl-unknown-unit"}
    places = [(e.span.line, e.span.column) for e in errors]
    assert places == sorted(places)
