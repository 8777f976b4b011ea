"""`mcl hwd list | show | path`, with --help everywhere and no tracebacks."""

from __future__ import annotations

import pytest

from mcl.cli import main
from tests.hdl.broken import MINI, write


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_list_shows_the_tree(capsys):
    code, out, _ = run(capsys, "hwd", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "perfect"
    assert any("fermi" in line and "(leaf)" in line for line in lines)
    # nvidia's children are drawn under it, indented further.
    nvidia = next(i for i, line in enumerate(lines) if "nvidia" in line)
    assert ("fermi" in lines[nvidia + 1]
            and lines[nvidia + 1].index("fermi") > lines[nvidia].index("nvidia"))
    for name in ("accelerator", "gpu", "hopper", "mic", "xeon_phi", "cpu", "x86_avx512"):
        assert name in out


def test_show_fermi(capsys):
    code, out, _ = run(capsys, "hwd", "show", "fermi")
    assert code == 0
    for text in ("specializes nvidia", "par_group warps", "(exactly 32)", "executing unit",
                 "memory_space constant  (read_only)", "on_chip", "48 kB", "nr_banks = 32",
                 "slots(block, 8)", "177.4 GB/s", "load_store_optimality", "l2", "768 kB"):
        assert text in out, text


def test_path(capsys):
    code, out, _ = run(capsys, "hwd", "path", "perfect", "fermi")
    assert code == 0 and out.strip() == "perfect → accelerator → gpu → nvidia → fermi"


def test_path_upwards_is_an_error(capsys):
    code, out, err = run(capsys, "hwd", "path", "fermi", "perfect")
    assert code == 1 and "not below" in err and "Traceback" not in err


def test_unknown_name(capsys):
    code, _, err = run(capsys, "hwd", "show", "fermy")
    assert code == 1 and "did you mean 'fermi'?" in err


def test_hwd_path_option_and_broken_file(capsys, tmp_path):
    write(tmp_path, MINI)
    code, out, _ = run(capsys, "hwd", "show", "mini", "--hwd-path", str(tmp_path))
    assert code == 0 and "par_group threads" in out
    write(tmp_path, MINI.replace("space(main);", "space(mian);"))
    code, out, err = run(capsys, "hwd", "list", "--hwd-path", str(tmp_path))
    assert code == 1
    assert f"{tmp_path / 'mini.hdl'}:21:3:" in err and "error: space(mian)" in err
    assert "did you mean 'main'?" in err and "space(mian);" in err  # the source line
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [["hwd", "--help"], ["hwd", "list", "--help"],
                                  ["hwd", "show", "--help"], ["hwd", "path", "--help"],
                                  ["hwd", "detect", "--help"]])
def test_help_everywhere(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "usage: mcl hwd" in capsys.readouterr().out


def test_hwd_without_subcommand_prints_usage_on_stderr(capsys):
    # As `mcl` alone (issue 19): usage on stderr, exit status 2.
    code, out, err = run(capsys, "hwd")
    assert code == 2 and out == "" and err.startswith("usage: mcl hwd")
    assert "list, show, path or detect" in err
