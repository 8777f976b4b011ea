"""Project settings in pyproject.toml `[tool.mcl]` or mcl.toml (issue 19): description and
include paths, the default level, values; the command line wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from mcl.diagnostics import MclError
from mcl.settings import find_settings
from tests.compat.test_user_libraries import INHERITING_KERNEL, family

KERNEL = """\
perfect void scale(int n, main float[n] a) {
  foreach (int i in n threads) {
    a[i] = a[i] * 2.0;
  }
}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("MCL_HWD_PATH", raising=False)
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")  # settings are found from a subfolder too
    return tmp_path


def test_pyproject_table(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    family(project / "hardware")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.mcl]\nhwd-path = ["hardware"]\nvalues = { n = 100 }\n')
    kernel = project / "add.mcpl"
    kernel.write_text(INHERITING_KERNEL)
    settings = find_settings()
    assert settings.hwd_path == [str(project / "hardware")] and settings.values == {"n": 100}
    assert main(["check", str(kernel)]) == 0  # mydev found, n known: numeric feedback
    assert "4*n (= 400)" in capsys.readouterr().out
    assert main(["check", str(kernel), "-D", "n=7"]) == 0  # -D wins
    assert "4*n (= 28)" in capsys.readouterr().out


def test_mcl_toml_level(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "mcl.toml").write_text('level = "gpu"\n')
    kernel = project / "scale.mcpl"
    kernel.write_text(KERNEL)
    assert main(["check", str(kernel), "--severity", "suggestion"]) == 0
    assert "at level gpu" in capsys.readouterr().out
    assert main(["check", str(kernel), "--level", "perfect", "--severity", "suggestion"]) == 0
    assert "at level perfect" in capsys.readouterr().out


def test_mcl_toml_wins_over_pyproject_in_the_same_folder(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.mcl]\nlevel = "gpu"\n')
    (project / "mcl.toml").write_text('level = "fermi"\n')
    assert find_settings().level == "fermi"


def test_a_pyproject_without_the_table_is_not_a_settings_file(project: Path) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_settings().file is None


@pytest.mark.parametrize(("text", "message"), [
    ('levle = "gpu"\n', "unknown mcl setting 'levle'"),
    ("values = { n = \"big\" }\n", "'values'"),
    ("include = 3\n", "'include'"),
    ("level = \n", "is not valid TOML"),
])
def test_bad_settings_are_errors_with_the_file(project: Path, text: str, message: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (project / "mcl.toml").write_text(text)
    with pytest.raises(MclError):
        find_settings()
    assert main(["hwd", "list"]) == 1
    err = capsys.readouterr().err
    assert f"{project / 'mcl.toml'}:1:1: error: " in err and message in err


def test_a_settings_file_is_parsed_once_per_text(project: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of a settings file is kept in the cache folder by its text
    (mcl.settings.CACHE): a later command does not parse it again until it changes."""
    from mcl import settings

    parsed: list[str] = []
    real = settings._parse
    monkeypatch.setattr(settings, "_parse",
                        lambda path, text: parsed.append(text) or real(path, text))
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n\n[tool.mcl]\nlevel = "gpu"\n')
    assert find_settings().level == "gpu"
    assert find_settings().level == "gpu"
    assert len(parsed) == 1
    pyproject.write_text('[project]\nname = "x"\n\n[tool.mcl]\nlevel = "cpu"\n')
    assert find_settings().level == "cpu"
    assert len(parsed) == 2
    pyproject.write_text('[tool.mcl\nlevel = "cpu"\n')  # not TOML: the error every time
    for _ in range(2):
        with pytest.raises(MclError, match="not valid TOML"):
            find_settings()
    assert len(parsed) == 4
