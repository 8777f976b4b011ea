"""The original MCL's code-generation facts (`input/codegen/<leaf>.lisp`) as our mapping.

The original compiler reads, next to its hardware descriptions, one Lisp property list per
leaf that says how the leaf's abstractions become OpenCL (the paper's 7: "a configuration
file that tells the compiler how the programming abstractions ... can be mapped to OpenCL
and C++ constructs"):

    '(:target "fermi" :output "opencl" :device-type "CL_DEVICE_TYPE_GPU"
      :memory-spaces (("shared" . ("__local" "barrier(CLK_LOCAL_MEM_FENCE)")) ...)
      :pargroups (("threads" . ("get_local_id" "get_local_size")) ...)
      ...)

This module reads such a file into the data of a `.opencl.toml` (mapping.py validates
both the same way), so a folder of original descriptions generates code unchanged, and
`mcl hwd import-codegen DIR` writes the `.opencl.toml` files once. The rules:

- a par_group whose index function is `get_local_id` is a work-item, `get_group_id` a
  work-group, `get_global_id` a global index; par_groups sharing a function take the
  NDRange dimensions 0, 1, 2 in the order the file lists them (the original lists the
  innermost first: fermi's threads are dimension 0, its warps dimension 1);
- a memory space's qualifier `""` is private, `__local`/`__global`/`__constant` are
  OpenCL's; its barrier statement names the fences it takes (`CLK_LOCAL_MEM_FENCE` ...);
- a read-only space of the description that the file leaves out (fermi's `constant`)
  is OpenCL `__constant`;
- `:builtin-funcs` must agree with mcl's own translation of the built-ins (c_expr.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Union

from mcl.diagnostics import MclError, Span, error
from mcl.hdl.model import HardwareDescription

SExpr = Union[str, "Keyword", "LispSymbol", list["SExpr"]]


class Keyword(str):
    """`:target` (a property name)."""


class LispSymbol(str):
    """A bare symbol (`t`, `nil`) or a number as written."""


_TOKEN = re.compile(r'\s+|;[^\n]*|(?P<open>\()|(?P<close>\))|(?P<quote>\')|'
                    r'"(?P<string>(?:[^"\\]|\\.)*)"|(?P<atom>[^\s()\'";]+)')

INDEX_ROLES = {"get_local_id": "work-item", "get_group_id": "work-group",
               "get_global_id": "global"}
QUALIFIERS = {"": "private", "__private": "private", "__local": "local",
              "__global": "global", "__constant": "constant"}
# The original MCL's only `:output` (its generated language), which mcl's OpenCL mapping
# reads.
ORIGINAL_OUTPUT = "opencl"
DEVICE_TYPES = {"CL_DEVICE_TYPE_GPU": "gpu", "CL_DEVICE_TYPE_CPU": "cpu",
                "CL_DEVICE_TYPE_ACCELERATOR": "accelerator", "CL_DEVICE_TYPE_ALL": "all",
                "CL_DEVICE_TYPE_DEFAULT": "all"}


class LispSyntaxError(ValueError):
    pass


def lisp_path(hwd: HardwareDescription) -> Path | None:
    """The original's facts for leaf `hwd`: `<leaf>.lisp` beside its `.hdl`, or in the
    `codegen` folder beside the `hdl` folder (the original's `input/` layout)."""
    if not getattr(hwd, "file", ""):
        return None
    folder = Path(hwd.file).parent
    for candidate in (folder / f"{hwd.name}.lisp",
                      folder.parent / "codegen" / f"{hwd.name}.lisp",
                      folder / "codegen" / f"{hwd.name}.lisp"):
        if candidate.is_file():
            return candidate
    return None


def read_sexpr(text: str) -> SExpr:
    """The first expression of `text` (a leading quote is dropped); dotted pairs whose
    tail is a list are spliced, as Lisp reads them: `("a" . ("b" "c"))` is `("a" "b" "c")`."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise LispSyntaxError(f"unexpected character {text[pos]!r} at offset {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind is not None:
            tokens.append((kind, m.group(kind)))
    if not tokens:
        raise LispSyntaxError("the file is empty")
    value, _ = _read(tokens, 0)
    return value


def _read(tokens: list[tuple[str, str]], i: int) -> tuple[SExpr, int]:
    if i >= len(tokens):
        raise LispSyntaxError("unexpected end of file (a ')' is missing)")
    kind, text = tokens[i]
    if kind == "quote":
        return _read(tokens, i + 1)
    if kind == "close":
        raise LispSyntaxError("unexpected ')'")
    if kind == "string":
        return text.replace('\\"', '"').replace("\\\\", "\\"), i + 1
    if kind == "atom":
        return (Keyword(text[1:]) if text.startswith(":") else LispSymbol(text)), i + 1
    items: list[SExpr] = []
    i += 1
    while True:
        if i >= len(tokens):
            raise LispSyntaxError("unexpected end of file (a ')' is missing)")
        if tokens[i][0] == "close":
            break
        item, i = _read(tokens, i)
        items.append(item)
    if len(items) >= 3 and items[-2] == LispSymbol("."):
        tail = items[-1]
        items = items[:-2] + (tail if isinstance(tail, list) else [tail])
    return items, i + 1


def _plist(expr: SExpr) -> dict[str, SExpr]:
    if not isinstance(expr, list) or len(expr) % 2:
        raise LispSyntaxError("expected a property list '(:key value ...)")
    out: dict[str, SExpr] = {}
    for key, value in zip(expr[::2], expr[1::2], strict=True):
        if not isinstance(key, Keyword):
            raise LispSyntaxError(f"expected a :keyword, found {key!r}")
        out[str(key)] = value
    return out


def _is_nil(value: SExpr) -> bool:
    """Lisp's `nil`, the empty list (the original distribution's own codegen files say
    `:builtin-funcs (nil)`: a list whose one entry is empty)."""
    return value == [] or (isinstance(value, LispSymbol) and value.lower() == "nil")


def _entries(value: SExpr, what: str) -> list[tuple[str, list[str]]]:
    """`(("name" . ("a" "b")) ...)` as [("name", ["a", "b"]), ...]; `nil` entries (and a
    `nil` list) are none."""
    if _is_nil(value):
        return []
    if not isinstance(value, list):
        raise LispSyntaxError(f":{what} is not a list")
    out = []
    for entry in value:
        if _is_nil(entry):
            continue
        if not isinstance(entry, list) or not entry or not all(isinstance(x, str)
                                                                  for x in entry):
            raise LispSyntaxError(f":{what}: expected (\"name\" . (\"...\" ...)), found "
                                  f"{entry!r}")
        out.append((str(entry[0]), [str(x) for x in entry[1:]]))
    return out


def _barrier(statement: str) -> str | None:
    local = "CLK_LOCAL_MEM_FENCE" in statement
    glob = "CLK_GLOBAL_MEM_FENCE" in statement
    if local and glob:
        return "local+global"
    return "local" if local else "global" if glob else None


def mapping_data(text: str, hwd: HardwareDescription | None = None) -> tuple[dict, list[str]]:
    """The `.opencl.toml` data of one original codegen file and the problems found
    (an unknown device type, index function or qualifier, a built-in mcl translates
    differently). Raises LispSyntaxError when the text is not a property list."""
    facts = _plist(read_sexpr(text))
    problems: list[str] = []
    output = facts.get("output", ORIGINAL_OUTPUT)
    if output != ORIGINAL_OUTPUT:
        problems.append(f":output {output!r}: mcl generates OpenCL only")
    data: dict = {}
    device = str(facts.get("device-type", "CL_DEVICE_TYPE_ALL"))
    if device not in DEVICE_TYPES:
        problems.append(f":device-type {device!r} is not one of {', '.join(DEVICE_TYPES)}")
    data["device_type"] = DEVICE_TYPES.get(device, "all")

    groups: dict[str, dict] = {}
    next_dim: dict[str, int] = {}
    for name, funcs in _entries(facts.get("pargroups", []), "pargroups"):
        role = INDEX_ROLES.get(funcs[0] if funcs else "")
        if role is None:
            problems.append(f":pargroups {name}: index function {funcs[:1]} is not one of "
                            f"{', '.join(INDEX_ROLES)}")
            continue
        dim = next_dim.get(funcs[0], 0)
        next_dim[funcs[0]] = dim + 1
        groups[name] = {"role": role, "dim": dim}
    data["par_groups"] = groups

    spaces: dict[str, dict] = {}
    for name, parts in _entries(facts.get("memory-spaces", []), "memory-spaces"):
        qualifier = parts[0] if parts else ""
        if qualifier not in QUALIFIERS:
            problems.append(f":memory-spaces {name}: qualifier {qualifier!r} is not one of "
                            f"{', '.join(repr(q) for q in QUALIFIERS)}")
            continue
        entry: dict = {"address_space": QUALIFIERS[qualifier]}
        barrier = _barrier(parts[1]) if len(parts) > 1 else None
        if barrier is not None:
            entry["barrier"] = barrier
        spaces[name] = entry
    if hwd is not None:
        for space in hwd.read_only_spaces():
            spaces.setdefault(space.name, {"address_space": "constant"})
    data["spaces"] = spaces

    from mcl.codegen.c_expr import ATOMICS

    for name, funcs in _entries(facts.get("builtin-funcs", []), "builtin-funcs"):
        ours = ATOMICS[name].opencl if name in ATOMICS else None
        if funcs and ours != funcs[0]:
            problems.append(f":builtin-funcs {name}: the original calls {funcs[0]}, mcl "
                            f"{ours or 'does not know it'}")
    return data, problems


def load_lisp_mapping(path: Path, hwd: HardwareDescription) -> dict:
    """The mapping data of `path` for `hwd`, or MclError naming the file."""
    try:
        data, problems = mapping_data(path.read_text(encoding="utf-8"), hwd)
    except LispSyntaxError as exc:
        problems, data = [str(exc)], {}
    if problems:
        span = Span.point(str(path), 1, 1)
        raise MclError([error("codegen-mapping", f"{path}: {p}", span) for p in problems])
    return data


def toml_text(data: dict, source: str) -> str:
    """The `.opencl.toml` file of mapping data converted from `source`."""
    lines = [f"# Converted from the original MCL's {source} by `mcl hwd import-codegen`.",
             f'device_type = "{data["device_type"]}"', "", "[par_groups]"]
    for name, g in data["par_groups"].items():
        lines.append(f'{name} = {{ role = "{g["role"]}", dim = {g["dim"]} }}')
    lines += ["", "[spaces]"]
    for name, s in data["spaces"].items():
        barrier = f', barrier = "{s["barrier"]}"' if "barrier" in s else ""
        lines.append(f'{name} = {{ address_space = "{s["address_space"]}"{barrier} }}')
    return "\n".join(lines) + "\n"
