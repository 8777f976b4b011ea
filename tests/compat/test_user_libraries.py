"""Existing MCL description libraries (issue 19): a folder with its own root replaces the
bundled library; one broken description does not hide the others; HDL the original
toolchain accepted loads (a cache without a line size, `connects` inside a
load_store_group); `--hwd-path` and `$MCL_HWD_PATH` are one code path. Each test writes
the small description folder that shows the incompatibility."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.hdl import library as L
from mcl.resources import hwdescs_dir
from tests.hdl.broken import MINI, write

# A user's two-level family below perfect: mydev inherits everything from myacc.
MYACC = MINI.replace("hardware_description mini;", "hardware_description myacc;").replace(
    "device mini {", "device myacc {")
MYDEV = """\
hardware_description mydev;
specializes myacc;

parallelism hierarchy {
  myacc.hierarchy.main;
  myacc.hierarchy.threads;
}

device mydev {
  myacc.mem;
  perfect.ic;
  myacc.cores;
}
"""
# Reads a constant of the user's parent description.
INHERITING_KERNEL = """\
mydev void add(int n, main float[n] c, main float[n] a) {
  int nr = myacc.cores.nr_units;
  foreach (int i in n threads) {
    for (int k = 0; k < nr; k++) {
      c[i] = c[i] + a[i];
    }
  }
}
"""


def family(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    write(folder, MYACC, "myacc")
    write(folder, MYDEV, "mydev")
    return folder


# ------------------------------------------------------------------ own root


def test_a_copy_of_the_whole_library_replaces_the_bundled_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The original distribution's folder brings perfect, accelerator, gpu, ...: before,
    # its perfect.hdl shadowed the bundled one and every bundled description failed.
    own = tmp_path / "mcl-library"
    shutil.copytree(hwdescs_dir(), own, ignore=shutil.ignore_patterns("*.py", "*.toml"))
    lib = L.load_library([own], use_env=False, partial=True)
    assert not lib.failed and not [w for w in lib.warnings if w.code == "hdl-shadowed"]
    assert {Path(h.file).parent for h in lib} == {own}
    assert main(["hwd", "list", "--hwd-path", str(own)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"only {own}\n") and "x86_avx512  (leaf)" in out.out
    assert out.err == ""


def test_a_folder_with_its_own_root_uses_none_of_the_bundled_descriptions(tmp_path: Path
                                                                          ) -> None:
    own = family(tmp_path / "own")
    shutil.copy(hwdescs_dir() / "perfect.hdl", own / "perfect.hdl")
    lib = L.load_library([own], use_env=False, partial=True)
    assert lib.names() == ["perfect", "myacc", "mydev"] and not lib.failed


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_no_bundled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = family(tmp_path / "lib")
    # Without a root of its own and without the bundled one, nothing has a parent.
    assert main(["hwd", "list", "--hwd-path", str(folder), "--no-bundled"]) == 1
    out = capsys.readouterr()
    assert "'myacc' specializes 'perfect', which is not a known description" in out.err
    assert "did not load: myacc, mydev" in out.out
    shutil.copy(hwdescs_dir() / "perfect.hdl", folder / "perfect.hdl")
    assert main(["hwd", "list", "--hwd-path", str(folder), "--no-bundled"]) == 0


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_clash_with_a_bundled_description_names_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, (hwdescs_dir() / "gpu.hdl").read_text(), "gpu")
    assert main(["hwd", "show", "gpu", "--hwd-path", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"'{tmp_path / 'gpu.hdl'}' replaces the description 'gpu' of '" in err
    assert str(hwdescs_dir() / "gpu.hdl") in err


# ------------------------------------------------------------------ one bad description


def test_one_broken_description_does_not_hide_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = family(tmp_path / "lib")
    write(folder, MINI.replace("48 kB", "48 KB"), "mini")  # an unknown unit
    assert main(["hwd", "list", "--hwd-path", str(folder)]) == 1
    out = capsys.readouterr()
    assert "└── mydev  (leaf)" in out.out and "fermi  (leaf)" in out.out
    assert "mini" not in out.out.split("did not load")[0]
    assert "did not load: mini" in out.out
    assert f"{folder / 'mini.hdl'}:" in out.err and "[hdl-unknown-unit]" in out.err
    # The others are usable; the broken one reports its own errors when asked for.
    assert main(["hwd", "show", "mydev", "--hwd-path", str(folder)]) == 0
    assert main(["hwd", "show", "mini", "--hwd-path", str(folder)]) == 1
    assert "[hdl-unknown-unit]" in capsys.readouterr().err


def test_a_child_of_a_broken_description_does_not_load(tmp_path: Path) -> None:
    folder = family(tmp_path / "lib")
    write(folder, MYACC.replace("48 kB", "48 KB"), "myacc")
    lib = L.load_library([folder], use_env=False, partial=True)
    assert set(lib.failed) == {"myacc", "mydev"}
    assert lib.failed["mydev"][0].code == "hdl-parent-not-loaded"
    assert "fermi" in lib
    with pytest.raises(L.MclError):
        L.load_library([folder], use_env=False)  # the strict loader (tests, API) still fails


# ------------------------------------------------------------------ HDL the original accepted


def test_cache_without_line_size_is_a_warning_with_a_default(tmp_path: Path) -> None:
    write(tmp_path, MINI.replace("memory mem {", "cache mem {"))
    lib = L.load_library([tmp_path], use_env=False)
    [w] = [w for w in lib.warnings if w.code == "hdl-cache-line"]
    assert "assuming 64 B" in w.message and w.span is not None
    assert [c.line_size for c in lib.get("mini").caches()] == [64]


def test_connects_inside_a_load_store_group(tmp_path: Path) -> None:
    text = MINI.replace(
        "load_store_unit lsu { slots(thread, 1); }",
        "load_store_group lsus {\n      nr_units = 1;\n      connects(mem, cores.core[*]);\n"
        "      load_store_unit lsu { slots(thread, 1); }\n    }")
    write(tmp_path, text)
    hwd = L.load_library([tmp_path], use_env=False).get("mini")
    links = [(ic.kind, a.path, b.path) for ic, a, b in hwd.links()]
    assert ("load_store_group", "mem", "cores.core") in links


def test_connects_elsewhere_is_still_misplaced(tmp_path: Path) -> None:
    write(tmp_path, MINI.replace("nr_units = 4;", "nr_units = 4;\n  connects(mem, mem);"))
    with pytest.raises(L.MclError) as info:
        L.load_library([tmp_path], use_env=False)
    assert [d.code for d in info.value.diagnostics] == ["hdl-misplaced-property"]


# ------------------------------------------------------------------ one code path


def test_hwd_path_and_environment_give_the_same_feedback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 11 item 6: with --hwd-path, constants of the user's parent description stayed
    # symbolic in the feedback ("myacc.cores.nr_units*n"), with the variable they were 4.
    folder = family(tmp_path / "lib")
    kernel = tmp_path / "add.mcpl"
    kernel.write_text(INHERITING_KERNEL)
    monkeypatch.delenv(L.ENV_VAR, raising=False)
    assert main(["check", str(kernel), "--hwd-path", str(folder), "-D", "n=100"]) == 0
    with_option = capsys.readouterr()
    monkeypatch.setenv(L.ENV_VAR, str(folder))
    assert main(["check", str(kernel), "-D", "n=100"]) == 0
    with_variable = capsys.readouterr()
    assert with_option == with_variable
    assert "#computational instructions: 4*n (= 400)" in with_option.out
