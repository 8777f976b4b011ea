"""Every file mcl writes goes through here (docs/user-guide.md, "Output files").

Two rules, one place:

- **Checked before the work.** A command checks each output path it was given
  (`check_output_file`, `check_output_folder`) before it analyses, translates or runs
  anything, so a read-only or mistyped folder costs a second, not a 25-second analysis.
  A folder that does not exist yet is fine when it can be made: its nearest existing
  parent must be a writable folder. No name in the path may be longer than that
  folder's file system allows (NAME_MAX).
- **Written whole or not at all.** A file is written to a temporary file beside it and
  renamed over the old one (`write_text`, `write_with`), so a full disk or a crash leaves
  the old file, not a truncated one. `write_generated_folder` does the same for a set of
  files (`mcl codegen`): all are written to a fresh temporary folder inside the output
  folder and moved into place only once every one is complete; it refuses to replace a
  file it did not generate (the marker line below) or a symbolic link unless forced, and
  never writes through a link.

Every failure is one diagnostic (`output-path`, `output-write`, `output-not-generated`),
never an OSError traceback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from mcl.diagnostics import MclError, error

# The first line of every file `mcl codegen` writes: how a later run knows it may replace
# the file (a user's own main.cpp or CMakeLists.txt carries no such line).
GENERATED_MARKER = "mcl-generated-file"
_MARKER_TEXT = (f"{GENERATED_MARKER}: written by mcl codegen, which replaces it on the next "
                "run (delete this line to keep your edits)")
_HASH_COMMENTS = (".txt", ".cmake", ".toml", ".py", ".sh")


def marker_line(name: str) -> str:
    """The marker as a comment in the syntax of file `name` (CMake `#`, C-family `//`)."""
    prefix = "#" if name.endswith(_HASH_COMMENTS) else "//"
    return f"{prefix} {_MARKER_TEXT}\n"


def is_generated(path: Path) -> bool:
    """Whether the regular file `path` starts with the marker (read without following a
    symbolic link: a link is never ours)."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return GENERATED_MARKER in f.readline(400)  # a binary file has no short line
    except OSError:
        return False


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _path_error(option: str, path: Path, why: str, hint: str | None = None) -> MclError:
    return MclError(error("output-path", f"{option} {path}: {why}", hint=hint))


def _exists(path: Path) -> bool:
    """Whether `path` exists; a path the system cannot even look up (a name too long for
    the file system) does not."""
    try:
        return path.exists()
    except OSError:
        return False


def _nearest_existing(path: Path) -> Path:
    current = path.absolute()
    while not _exists(current) and current != current.parent:
        current = current.parent
    return current


# POSIX's smallest NAME_MAX the system may have; used when the folder does not say.
_DEFAULT_NAME_MAX = 255


def _check_name_lengths(option: str, path: Path) -> None:
    """Every name in `path` fits the file system of the folder that would hold it (a
    longer one fails every call on the path with 'File name too long')."""
    try:
        limit = os.pathconf(_nearest_existing(path), "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = _DEFAULT_NAME_MAX
    for name in path.parts:
        size = len(os.fsencode(name))
        if size > limit:
            raise _path_error(
                option, path,
                f"the name '{name[:24]}...' ({size} bytes) is longer than the file system "
                f"allows ({limit} bytes)",
                hint="choose a shorter name")


def _check_writable_folder(option: str, path: Path, folder: Path) -> None:
    """`folder` (or, if missing, the folder that would hold it) can take new files."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise _path_error(option, path, f"{existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise _path_error(option, path, f"the folder {existing} is not writable",
                          hint="choose a folder you can write to")


def check_output_file(path: str | Path, option: str) -> Path:
    """The output file of `option` (e.g. `-o`, `--plot`), checked before any work: not a
    folder, and its folder exists and is writable, or can be made."""
    out = Path(path)
    _check_name_lengths(option, out)
    if str(path) == "" or out.is_dir():
        raise _path_error(option, out, "is a folder, not a file", hint="name a file")
    if out.exists() and not os.access(out, os.W_OK):
        raise _path_error(option, out, "the file is not writable")
    _check_writable_folder(option, out, out.parent)
    return out


def check_output_folder(path: str | Path, option: str) -> Path:
    """The output folder of `option`, checked before any work: a writable folder, or one
    that can be made."""
    out = Path(path)
    _check_name_lengths(option, out)
    if out.exists() and not out.is_dir():
        raise _path_error(option, out, "exists and is not a folder", hint="name a folder")
    _check_writable_folder(option, out, out)
    return out


def _write_error(path: Path, exc: OSError) -> MclError:
    return MclError(error("output-write", f"cannot write {path}: {_reason(exc)}",
                          hint="nothing was replaced; free some space or choose another "
                          "path" if exc.errno in (28, 122) else None))


@contextlib.contextmanager
def _temporary_beside(path: Path) -> Iterator[Path]:
    """A fresh temporary file name in `path`'s folder (same file system, so the final
    rename is atomic), removed unless it was renamed into place."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    temporary = Path(name)
    # mkstemp makes the file private (0600); a written file gets the permissions any new
    # file of the user gets.
    umask = os.umask(0)
    os.umask(umask)
    temporary.chmod(0o666 & ~umask)
    try:
        yield temporary
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def write_with(path: str | Path, writer: Callable[[Path], object]) -> Path:
    """Let `writer` write the file at a temporary path beside `path`, then rename it into
    place; every OSError is one `output-write` diagnostic and leaves `path` as it was."""
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with _temporary_beside(out) as temporary:
            writer(temporary)
            os.replace(temporary, out)
    except OSError as exc:
        raise _write_error(out, exc) from None
    return out


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path`, whole or not at all."""
    return write_with(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def write_generated_folder(folder: str | Path, files: Mapping[str, str], force: bool) -> Path:
    """Write `files` (name -> text) into `folder`, each with the marker line first.

    Refuses, before writing anything, to replace a file without the marker or a symbolic
    link (unless `force`: then the link itself is replaced, never its target). All files
    are written into a fresh temporary folder inside `folder` first and renamed into place
    only when every one is complete, so a full disk leaves the old set untouched."""
    out = Path(folder)
    theirs = [name for name in files if (out / name).is_symlink()
              or ((out / name).exists() and not is_generated(out / name))]
    if theirs and not force:
        raise MclError(error(
            "output-not-generated",
            f"{out} already holds {', '.join(theirs)}, not written by mcl codegen "
            "(or a symbolic link); not replacing "
            f"{'it' if len(theirs) == 1 else 'them'}",
            hint="choose another folder with -o, or pass --force to replace them"))
    for name in files:
        if (out / name).is_dir() and not (out / name).is_symlink():
            raise _path_error("-o", out, f"{out / name} is a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=out, prefix=".mcl-codegen-"))
    except OSError as exc:
        raise _write_error(out, exc) from None
    try:
        for name, text in files.items():
            (staging / name).write_text(marker_line(name) + text, encoding="utf-8")
        for name in files:
            # os.replace renames over a link without following it.
            os.replace(staging / name, out / name)
    except OSError as exc:
        raise _write_error(out / name, exc) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def say_written(path: str | Path, stdout_is_data: bool) -> None:
    """The `wrote PATH` line after a command wrote a file: on stdout, or on stderr when
    stdout carries a document (JSON, MCPL) that a tool reads."""
    import sys

    print(f"wrote {path}", file=sys.stderr if stdout_is_data else sys.stdout)
