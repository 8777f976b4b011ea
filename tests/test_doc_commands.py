"""Every `mcl ...` command the docs show in a code block is one today's `mcl` reads, and the
ones that run on this machine's CPU in a few seconds print what the doc shows after them
(the rule is stated in docs/index.md, "Documented commands are tested").

A command is a line of a fenced block of README.md or docs/*.md that starts with `mcl`,
`$ mcl`, `python -m mcl` (after environment settings such as `PYTHONPATH=.`) or
`pip install -e . && mcl`; a line ending in `\\` goes on on the next; `# ...` is a comment.
A synopsis (a line with `[`, `|`, `<` or `...`: `mcl apply K.mcpl [--level L] [--list]`)
only names options: its command and each option must exist.

- Fast tier: each command parses with `mcl.cli.build_parser` (the subcommand and every
  option exist, every value is accepted); for a synopsis, each option is one of its
  command's.
- Slow tier: each command is run in-process (`mcl.cli.main`) in an empty folder with
  copies of the repository's `kernels/`, `tests/refine/kernels/` and
  `tests/feedback/kernels/` (and `/tmp/` a folder of its own there), after the files and
  commands PREPARED and SETUP name, and must exit 0 (FAILS: the status of an error it
  shows), unless NOT_RUN names it with the reason (a GPU, a long run, files of the
  reader's own). Where the doc shows the
  command's output (the lines after it in its block, up to the next command; after a
  command without `$ `, its `#   ` comment lines), each line shown must be in what it
  prints, in the doc's order: whitespace is ignored (the docs wrap lines where a
  terminal would), lines the doc leaves out between them are allowed (an excerpt), and
  `...`, `…` and `(...)` stand for text left out within a line. The figures a run
  measures (a wall-clock time, a share of the roof) are listed in VARIES and compared as
  "some text".
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcl.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

FENCE = re.compile(r"^```[\w-]*\n(.*?)^```", re.S | re.M)
# `$ `, environment settings, `python -m`, an install before it; then `mcl`
START = re.compile(
    r"^(?:\$ )?(?:[A-Z_]+=\S* )*(?:pip install -e \. && )?(?:python3? -m )?mcl(?: |$)")
SHELL = (">", "|", "&&", "2>&1")
SYNOPSIS = re.compile(r"[\[|<]|\.\.\.|…")
# what the doc leaves out of a command's output
ELISION = re.compile(r"\(\.\.\.\)|\.\.\.|…")


@dataclass(frozen=True)
class Documented:
    doc: str  # relative to the repository
    line: int
    text: str  # as written, continuation lines joined, without a trailing comment
    shown: str  # the output the doc shows after it ("" for none)

    @property
    def argv(self) -> list[str]:
        """The arguments after `mcl`."""
        words = shlex.split(self.text, comments=True)
        words = words[words.index("mcl") + 1:]
        # a shell's redirection ends mcl's arguments
        return words[:min((words.index(s) for s in SHELL if s in words), default=None)]

    @property
    def environment(self) -> dict[str, str]:
        """The settings before `mcl` (`MCL_DUMP=after:translate mcl check ...`)."""
        words = shlex.split(self.text, comments=True)
        return dict(w.split("=", 1) for w in words[:words.index("mcl")] if "=" in w)

    @property
    def synopsis(self) -> bool:
        return bool(SYNOPSIS.search(self.text))

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def documented_commands() -> list[Documented]:
    found: list[Documented] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            first = text.count("\n", 0, block.start(1)) + 1
            lines = block.group(1).splitlines()
            index = 0
            while index < len(lines):
                line = lines[index].strip()
                index += 1
                if not START.match(line):
                    continue
                start = first + index - 1
                while line.endswith("\\") and index < len(lines):
                    line = line[:-1].rstrip() + " " + lines[index].strip()
                    index += 1
                shown: list[str] = []
                if line.startswith("$ "):  # the output, up to the next command
                    while index < len(lines) and not lines[index].startswith("$ ") \
                            and not START.match(lines[index].strip()):
                        shown.append(lines[index])
                        index += 1
                else:  # the output as comments: `#   info: ...`
                    while index < len(lines) and lines[index].startswith("#   "):
                        shown.append(lines[index][1:])
                        index += 1
                command = re.sub(r"^\$ ", "", line)
                command = " ".join(shlex.split(command, comments=True)) if "#" in command \
                    else command
                found.append(Documented(str(path.relative_to(ROOT)), start, command,
                                        "\n".join(shown).strip()))
    return found


COMMANDS = documented_commands()


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subs[0].choices) if subs else {}


def options_of(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command `argv` names (`hwd show` is a command of `hwd`)."""
    for word in argv:
        if word not in commands_of(parser):
            break
        parser = commands_of(parser)[word]
    return parser


def synopsis_errors(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """What a synopsis names that `mcl` lacks: its command, or options of it."""
    words = [w.strip("[]") for w in argv]
    if words[0] not in commands_of(parser):
        return [f"no command {words[0]}"]
    own = options_of(parser, words)
    known = {o for a in own._actions for o in a.option_strings}
    options = {w.split("=")[0] for w in words if re.match(r"-[-\w]", w)}
    return [f"unknown {o}" for o in sorted(options - known)]


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_the_command_parses(command: Documented) -> None:
    parser = build_parser()
    if command.synopsis:
        assert synopsis_errors(parser, command.argv) == [], command
        return
    try:
        parser.parse_args(command.argv)
    except SystemExit as exit_:  # a usage error; `--version` exits 0
        assert exit_.code == 0, f"{command}: mcl cannot read it"


# A command written in running text (`mcl tune ... --parallel`) is read as a synopsis: its
# command and options must exist. Spans that start with `mcl` but are not commands:
INLINE = re.compile(r"`((?:[A-Z_]+=\S* )*(?:python3? -m )?mcl [a-z][^`]*)`")
NOT_COMMANDS = {
    "mcl feedback": "the source name of the editor's feedback diagnostics (editor.md)",
}


def inline_commands() -> list[Documented]:
    found: list[Documented] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
        text = FENCE.sub(blank, text)  # the blocks are read above
        for span in INLINE.finditer(text):
            command = " ".join(span.group(1).replace("\\|", "|").split())
            message = re.match(r"(?:\S+ )*?mcl [a-z]+:", command)  # `mcl run: interpreting`
            if not message and command not in NOT_COMMANDS:
                line = text.count("\n", 0, span.start()) + 1
                found.append(Documented(str(path.relative_to(ROOT)), line, command, ""))
    return found


INLINE_COMMANDS = inline_commands()


def test_the_commands_in_running_text_name_existing_options() -> None:
    parser = build_parser()
    wrong = []
    for command in INLINE_COMMANDS:
        words = command.text.split()
        argv = words[words.index("mcl") + 1:]
        wrong += [f"{command}: {e}" for e in synopsis_errors(parser, argv)]
    assert len(INLINE_COMMANDS) >= 300
    assert wrong == []


def test_the_docs_show_commands() -> None:
    # the reading above finds what it should: a guard against a pattern that finds nothing
    assert len(COMMANDS) >= 80
    assert sum(bool(c.shown) for c in COMMANDS) >= 15
    assert all(c.argv for c in COMMANDS)


# The documented commands that are not run here, with the reason (keyed by the command as
# written; a command not listed is run, so a new one must run or be listed).
GPU = "needs an NVIDIA GPU (the lead runs it on the GPU host)"
OWN = "the reader's own files (placeholders), not in the repository"
NOT_RUN = {
    "pip install -e . && mcl demo": "installs the package; the demo is tests/test_demo.py",
    "mcl demo": "about a minute of OpenCL builds; tests/test_demo.py runs it",
    "mcl run kernels/matmul/perfect.mcpl --target hopper --device nvidia --verify": GPU,
    "mcl tune kernels/gesummv/hopper_v3.mcpl --target hopper --backend cuda": GPU,
    "mcl lsp": "a server: reads LSP messages until `exit` (tests/lsp/)",
    "mcl lsp --tcp 2087": "a server: listens until stopped (tests/lsp/)",
    "mcl check kernel.mcpl --level accelerator --values sizes.toml --format json": OWN,
    "mcl hwd detect --measure -o ~/mcl-hw":
        "benchmarks this machine's devices for minutes and writes to the home folder",
    "mcl hwd show NAME --hwd-path ~/mcl-hw": OWN,
    "mcl run kernels/matmul/perfect.mcpl --level NAME --target NAME --verify "
    "--hwd-path ~/mcl-hw": OWN,
    "PYTHONPATH=. python -m mcl tune kernels/matmul/hopper_v2.mcpl --target hopper "
    "--device nvidia -D n=4096 -D m=4096 -D p=4096 --iterations 5": GPU,
    "mcl report kernels/matmul --run -D n=1024 -D m=1024 -D p=1024 --repeat 3 --versions "
    "perfect,x86_avx512_v1,x86_avx512_v2,x86_avx512_v3 --plot "
    "docs/img/matmul-series-pocl.png --format json -o "
    "benchmarks/results/2026-11-24-pocl-matmul-series-roofline-1024.json":
        "the historical log's run: minutes on PoCL, and it writes committed result files",
    "mcl roofline kernels/matmul/perfect.mcpl kernels/matmul/x86_avx512_v1.mcpl "
    "kernels/matmul/x86_avx512_v2.mcpl kernels/matmul/x86_avx512_v3.mcpl --level x86_avx512 "
    "-D n=1024 -D m=1024 -D p=1024 --run --repeat 3 --plot docs/img/matmul-roofline-pocl.png "
    "--format json > benchmarks/results/2026-11-24-pocl-matmul-roofline-1024.json":
        "the historical log's run: minutes on PoCL, and it writes committed result files",
    "PYTHONPATH=. python -m mcl report kernels/matmul --run --device nvidia --repeat 5 "
    "-D n=4096 -D m=4096 -D p=4096 --format json -o "
    "benchmarks/results/DATE-h100-matmul-report.json --plot docs/img/matmul-series-h100.png":
        GPU,
    "PYTHONPATH=. python -m mcl report kernels/convolution --run --device nvidia --repeat 5 "
    "-D h=4096 -D w=4096 -D fh=9 -D fw=9 --format json -o "
    "benchmarks/results/DATE-h100-convolution-report.json --plot "
    "docs/img/convolution-series-h100.png": GPU,
    "PYTHONPATH=. python -m mcl roofline kernels/matmul --level hopper --run --device nvidia "
    "-D n=4096 -D m=4096 -D p=4096 --format json --plot docs/img/matmul-roofline-h100.png > "
    "benchmarks/results/DATE-h100-matmul-roofline.json": GPU,
    "mcl profile kernels/gesummv/hopper_v1.mcpl --target hopper -D n=4096":
        GPU + " and Nsight Compute",
    "mcl profile kernels/gesummv/hopper_v1.mcpl --target hopper -D n=4096 --format json":
        GPU + " and Nsight Compute",
    "mcl profile kernels/gesummv --target hopper -D n=4096": GPU + " and Nsight Compute",
    "mcl profile kernels/gesummv --target hopper -D n=4096 --counters FOLDER": OWN,
    "mcl run kernels/matmul/hopper_v1.mcpl --target hopper -D n=8192 --devices 0,1 --verify":
        GPU + " (two of them)",
    "mcl run kernels/matmul/hopper_v1.mcpl --target hopper --devices all": GPU,
    "mcl run K.mcpl --target hopper --scheduler tcp://node1:8786 --verify --format json":
        OWN + "; a Dask cluster",
    "mcl run K.mcpl --target hopper --devices all --chunks 4": OWN,
    "mcl run K.mcpl --target hopper --devices all --rounds 10": OWN,
    "mcl tune kernels/matmul/hopper_v1.mcpl --target hopper --parallel": GPU,
    "mcl tune K.mcpl --target hopper --parallel --scheduler tcp://node1:8786":
        OWN + "; a Dask cluster",
    "mcl tune kernels/matmul/hopper_v2.mcpl --target hopper --device nvidia -D n=4096 "
    "-D m=4096 -D p=4096 --progress": GPU,
    "mcl run kernels/matmul/hopper_v2.mcpl --target hopper --device nvidia -D n=4096 "
    "-D m=4096 -D p=4096 --verify": GPU,
    "mcl report kernels/matmul --run -D n=1024 -D m=1024 -D p=1024":
        "every version run on PoCL: several minutes on this machine",
    "mcl report kernels/matmul --run --device nvidia -D n=4096 -D m=4096 -D p=4096": GPU,
    "mcl roofline kernels/matmul/perfect.mcpl kernels/matmul/x86_avx512_v1.mcpl "
    "kernels/matmul/x86_avx512_v2.mcpl kernels/matmul/x86_avx512_v3.mcpl --level x86_avx512 "
    "-D n=1024 -D m=1024 -D p=1024 --run --plot roofline.png":
        "four versions run on PoCL at 1024³: minutes on this machine",
    "mcl report kernels/matmul --run -D n=1024 -D m=1024 -D p=1024 --versions "
    "perfect,x86_avx512_v1,x86_avx512_v2,x86_avx512_v3,x86_avx512_v4 --plot series.png":
        "five versions run on PoCL at 1024³: minutes on this machine",
    "mcl roofline kernels/matmul/perfect.mcpl kernels/matmul/x86_avx512_v3.mcpl --level "
    "x86_avx512 -D n=1024 -D m=1024 -D p=1024 --run --plot roofline.svg":
        "perfect run on PoCL at 1024³: minutes on this machine",
}
def block_after(doc: str, name: str) -> str:
    """The fenced block that follows the line naming file `name` (`descriptions/mydev.hdl`,
    or "A kernel `add.mcpl`:")."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    block = re.search(rf"^.*`{re.escape(name)}`:?\n```[\w-]*\n(.*?)^```", text, re.S | re.M)
    assert block, f"{doc} shows no file {name}"
    return block.group(1)


# Files a command needs that the doc gives or describes: {command: {path: text}}.
PREPARED: dict[str, dict[str, str]] = {
    # the example of a feedback function for a description of one's own
    "mcl check add.mcpl --hwd-path descriptions -D n=1000": {
        name: block_after("feedback-functions.md", name)
        for name in ("descriptions/mydev.hdl", "descriptions/mydev_feedback.py", "add.mcpl")},
    # "mcl check kernels/matmul/perfect.mcpl broken.mcpl": a file with one error
    "mcl check kernels/matmul/perfect.mcpl broken.mcpl": {
        "broken.mcpl": "perfect void f( {\n"},
    # "kernels/reduction/gpu_v1.mcpl with `const int BLOCK = 1025;`"
    "mcl run gpu_v1.mcpl --interp --reference kernels/reduction/reference.py -D n=3000": {
        "gpu_v1.mcpl": re.sub(r"const int BLOCK = \d+;", "const int BLOCK = 1025;", (
            ROOT / "kernels" / "reduction" / "gpu_v1.mcpl").read_text(encoding="utf-8"))},
}
# Commands run before one (in its folder) to make the files the doc says it starts from:
# a perfect kernel translated to hopper (hopper_v1.mcpl), then `name-counts`
# (hopper_v2.mcpl), with its application's reference.py beside them.
TRANSLATED = ["translate", "kernels/{app}/perfect.mcpl", "--to", "hopper", "-o", "hopper_v1.mcpl"]
NAMED = ["apply", "hopper_v1.mcpl", "name-counts"]
SETUP: dict[str, tuple[str, tuple[list[str], ...]]] = {  # command: (application, steps)
    "mcl apply hopper_v1.mcpl name-counts -D n=4096": ("gesummv", (TRANSLATED,)),
    "mcl apply hopper_v1.mcpl uncoalesced@14 -D n=16384 -D m=16384": ("transpose", (TRANSLATED,)),
    "mcl apply hopper_v1.mcpl vector-groups:line=28 -D n=4000000": ("blackscholes", (TRANSLATED,)),
    "mcl apply hopper_v2.mcpl row-per-warp:line=20 -D n=4096":
        ("gesummv", (TRANSLATED, NAMED + ["-D", "n=4096"])),
    "mcl apply hopper_v2.mcpl row-per-warp:line=19,lanes=8 -D nrows=1000000 -D ncols=1000000 "
    "-D nnz=20000000": ("spmv", (TRANSLATED, NAMED + ["-D", "nrows=1000000", "-D",
                                                      "ncols=1000000", "-D", "nnz=20000000"])),
    "mcl apply hopper_v2.mcpl tile-2d:line=21,elems_i=8,elems_j=4 -D n=4096 -D m=4096 "
    "-D p=4096": ("matmul", (TRANSLATED, NAMED + ["-D", "n=4096", "-D", "m=4096", "-D", "p=4096"])),
    "mcl apply hopper_v2.mcpl stencil-tile:line=21 -D h=4096 -D w=4096 -D fh=9 -D fw=9":
        ("convolution", (TRANSLATED, NAMED + ["-D", "h=4096", "-D", "w=4096", "-D", "fh=9",
                                              "-D", "fw=9"])),
    "mcl apply hopper_v2.mcpl tile-2d-shared:line=21,elems_i=8,elems_j=8,threads_i=16,"
    "threads=256 -D n=4096 -D m=4096 -D p=4096":
        ("matmul", (TRANSLATED, NAMED + ["-D", "n=4096", "-D", "m=4096", "-D", "p=4096"])),
    "mcl apply hopper_v2.mcpl tile-2d-prefetch:line=21,elems_i=8,elems_j=8,threads_i=16,"
    "threads=256 -D n=4096 -D m=4096 -D p=4096":
        ("matmul", (TRANSLATED, NAMED + ["-D", "n=4096", "-D", "m=4096", "-D", "p=4096"])),
    "mcl apply x86_avx512_v1.mcpl --level x86_avx512 cpu-blocks:line=12":
        ("matmul", (["translate", "kernels/{app}/perfect.mcpl", "--to", "x86_avx512", "-o",
                     "x86_avx512_v1.mcpl"],)),
}
# The exit status of a command whose shown output is an error.
FAILS = {
    "mcl check kernels/matmul/perfect.mcpl broken.mcpl": 1,
    "mcl run gpu_v1.mcpl --interp --reference kernels/reduction/reference.py -D n=3000": 1,
    "mcl run kernels/transpose/perfect.mcpl --target hopper --devices 1,1": 1,
}
# What a run measures, differently each time (the doc's text matching it is compared as
# "some text"): (command, regular expression over the doc's shown output).
VARIES: dict[str, tuple[str, ...]] = {
    "mcl run kernels/matmul/perfect.mcpl --interp -D n=13": (r"[\d.]+ ms",),  # wall clock
    # the search's wall time
    "mcl refine kernels/transpose/gpu_v1.mcpl --target hopper -D n=8192 -D m=8192 -o /tmp/t":
        (r"[\d.]+ s;",),
    # the kernel's time on the machine it ran on, and so its share of the roof
    "mcl run kernels/matmul/x86_avx512_v3.mcpl --target x86_avx512 --repeat 3 -D n=1024 "
    "-D m=1024 -D p=1024": (r"[\d.]+ ms", r"\d+%"),
}

# The CPU's name in PoCL's device name differs from machine to machine (CI's fresh
# machines are Intel or AMD): compared as "some text" in every command's output.
DEVICE_NAME = r"(?s)pthread-.*?\(Portable Computing Language\)"


def comparable(text: str) -> str:
    return re.sub(r"\s+", "", text)


def missing(shown: str, printed: str, varies: tuple[str, ...] = ()) -> str | None:
    """The first line (or piece of a line between elisions) of the shown output that is
    not in what was printed after the lines before it, or None."""
    for pattern in varies:
        shown = re.sub(pattern, "...", shown)
    at = 0
    printed = comparable(printed)
    for piece in ELISION.split(shown.replace("\n", "...")):
        piece = comparable(piece)
        found = printed.find(piece, at)
        if found < 0:
            return piece
        at = found + len(piece)
    return None


def test_the_comparison_finds_a_changed_figure() -> None:
    printed = "time estimate: 58.3 µs over 6 phases\n  limited by device memory"
    assert missing("time estimate: 58.3 µs over\n6 phases (...) memory", printed) is None
    assert missing("time estimate: 58.4 µs over 6 phases", printed) is not None
    assert missing("limited by device memory ... 58.3 µs", printed) is not None  # order
    assert missing("limited by device\nmemory", printed) is None  # a line wrapped anew
    assert missing("time estimate: 12.5 ms", printed, (r"[\d.]+ ms",)) is None


def test_every_listed_command_is_documented() -> None:
    documented = {c.text for c in COMMANDS}
    for listed in (NOT_RUN, PREPARED, FAILS, VARIES, SETUP):
        assert set(listed) <= documented, sorted(set(listed) - documented)
    spans = {" ".join(m.group(1).split()) for path in DOCS
             for m in INLINE.finditer(path.read_text(encoding="utf-8"))}
    assert set(NOT_COMMANDS) <= spans


RUN = [c for c in COMMANDS if not c.synopsis and c.text not in NOT_RUN]


@pytest.mark.slow
@pytest.mark.usefixtures("whole_lines")
@pytest.mark.parametrize("command", RUN, ids=str)
def test_the_command_prints_what_the_doc_shows(
    command: Documented, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a copy of the kernels: a command may write next to its input (`apply`'s next version)
    shutil.copytree(ROOT / "kernels", tmp_path / "kernels")
    for tests in ("refine", "feedback"):  # the kernels of the docs' examples
        shutil.copytree(ROOT / "tests" / tests / "kernels", tmp_path / "tests" / tests / "kernels")
    for name, text in PREPARED.get(command.text, {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    if command.text in SETUP:
        app, steps = SETUP[command.text]
        shutil.copy(ROOT / "kernels" / app / "reference.py", tmp_path)
        for step in steps:
            assert main([word.format(app=app) for word in step]) == 0, step
        capsys.readouterr()
    for name, value in command.environment.items():
        if name != "PYTHONPATH":
            monkeypatch.setenv(name, value)
    (tmp_path / "tmp").mkdir()  # `-o /tmp/t` writes into the test's own folder
    argv = [a.replace("/tmp/", f"{tmp_path}/tmp/", 1) if a.startswith("/tmp/") else a
            for a in command.argv]
    try:
        status = main(argv)
    except SystemExit as exit_:  # `mcl --version`
        status = int(exit_.code or 0)
    out, err = capsys.readouterr()
    assert status == FAILS.get(command.text, 0), f"{command}\n{out[-2000:]}\n{err[-2000:]}"
    if command.shown:
        piece = missing(command.shown, out + err, (*VARIES.get(command.text, ()), DEVICE_NAME))
        assert piece is None, f"{command}: not printed: {piece}\n{out[-3000:]}\n{err[-2000:]}"
