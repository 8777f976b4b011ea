"""The mapping of a leaf hardware description to a backend's language (paper sections 4.4
and 7).

"The compiler reads in the hardware description fermi but also a configuration file that
tells the compiler how the programming abstractions defined in hardware description fermi
can be mapped to OpenCL and C++ constructs." That file is `<leaf>.<backend>.toml` (OpenCL's
`<leaf>.opencl.toml`), next to `<leaf>.hdl` (so a user description in a `--hwd-path`
folder brings its own mapping). A backend names the constructs in its own words
(`MappingVocabulary`, mcl.codegen.backend); OpenCL's:

    device_type = "gpu"                      # preferred device: gpu | cpu | accelerator | all
    [par_groups]
    blocks  = { role = "work-group", dim = 0 }
    warps   = { role = "work-item",  dim = 1 }
    threads = { role = "work-item",  dim = 0 }
    [spaces]
    global = { address_space = "global", barrier = "global" }
    shared = { address_space = "local",  barrier = "local" }
    reg    = { address_space = "private" }
    [codegen]                                # optional; defaults shown
    unroll = 16                              # `#pragma unroll` on loops of <= 16 steps (0: off)
    vector_width = 0                         # copy loops of 4 floats as one float4 (0: off)
    lanes = "vectors"                        # this par_group's units are the components of
                                             # OpenCL vectors (lanes.py); default: none

Roles of a par_group (its foreach statements become):
  work-group  the work-groups of NDRange dimension `dim` (get_group_id)
  work-item   the work-items of one work-group in dimension `dim` (get_local_id)
  global      work-items spread over work-groups of `group_size` (get_global_id); counts
              that are not a multiple of group_size are guarded
  loop        a sequential loop inside one work-item (e.g. vector lanes left to the
              OpenCL compiler's vectoriser)
Several foreach statements over par_groups of one role and dimension share that dimension
(innermost varies fastest). The model below keeps OpenCL's words whatever the backend, so
one emitter serves every backend (mcl.codegen.dialect).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, Span, did_you_mean, error
from mcl.hdl.model import HardwareDescription
from mcl.parse_cache import ParseCache

if TYPE_CHECKING:
    from mcl.codegen.backend import Backend
    from mcl.codegen.dialect import Dialect

# The tables of the mapping files read, kept on disk by their text (mcl/parse_cache.py),
# as the settings' are (mcl.settings.CACHE): a check at hopper whose program is new (after
# an edit) generates code for the compiler's counts and reads two mappings, and importing
# tomllib and parsing them was most of that.
TABLES: ParseCache[dict[str, Any]] = ParseCache(
    "mapping", dict, sources=("codegen/mapping.py",), modules=frozenset())

ROLES = ("work-group", "work-item", "global", "loop")
ADDRESS_SPACES = ("global", "local", "constant", "private")
BARRIERS = ("local", "global", "local+global")
DEVICE_TYPES = ("gpu", "cpu", "accelerator", "all")

DEFAULT_UNROLL = 16


# The OpenCL fence flags of each barrier kind in the mapping file.
FENCE_FLAGS = {
    "local": "CLK_LOCAL_MEM_FENCE",
    "global": "CLK_GLOBAL_MEM_FENCE",
    "local+global": "CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE",
}


@dataclass(frozen=True)
class ParGroupMapping:
    """How a parallelism group maps to the backend's index space."""

    role: str
    dim: int = 0
    group_size: int | None = None  # role "global" only


@dataclass(frozen=True)
class SpaceMapping:
    """How a memory space maps to the backend's address space."""

    address_space: str
    barrier: str | None = None  # None: barrier() on this space is not possible

    @property
    def qualifier(self) -> str:
        """The OpenCL address-space qualifier (`__global`), empty for private."""
        return "" if self.address_space == "private" else f"__{self.address_space}"


@dataclass(frozen=True)
class OpenCLMapping:
    """A leaf's mapping to a backend (`<leaf>.<backend>.toml`)."""

    hwd: str
    file: str
    device_type: str
    par_groups: dict[str, ParGroupMapping]
    spaces: dict[str, SpaceMapping]
    # The backend whose words the file is in, and whose language the kernels are emitted
    # in (the registry, mcl.backends, finds it by name: code generation is handed it).
    backend: Backend = field(compare=False, repr=False)
    # Loops whose trip count is a compile-time constant of at most this many steps get
    # `#pragma unroll` (register tiles and micro-kernels stay in registers); 0: never.
    unroll: int = DEFAULT_UNROLL
    # Whether a loop that holds a barrier gets the pragma too. Off for a build that only
    # checks results (mcl.refine.device_check): PoCL's work-group compiler copies the
    # code between barriers per unrolled step, and a loop of 8 steps around a barrier
    # under a condition took over 5 minutes to build; the pragma changes no result.
    unroll_barrier_loops: bool = True
    # Copy loops of exactly this many contiguous floats become one vector access
    # (vectorize.py); 0: never.
    vector_width: int = 0
    # The par_group whose units become the components of OpenCL vectors (lanes.py) when
    # it is the innermost foreach of a kernel; None: work-items as any other.
    lanes: str | None = None
    arch: str | None = None  # the leaf's architecture, where the backend has one ("sm_90")

    @property
    def language(self) -> str:
        """The backend's name."""
        return self.backend.name

    @property
    def dialect(self) -> Dialect:
        return self.backend.dialect

    def group(self, name: str) -> ParGroupMapping:
        return self.par_groups[name]

    def space(self, name: str) -> SpaceMapping:
        return self.spaces[name]


def mapping_path(hwd: HardwareDescription, language: str) -> Path:
    """`<leaf>.<language>.toml` in the folder of the description's `.hdl` file."""
    from mcl.resources import hwdescs_dir

    folder = Path(hwd.file).parent if getattr(hwd, "file", "") else hwdescs_dir()
    return folder / f"{hwd.name}.{language}.toml"


def read_mapping(
    hwd: HardwareDescription, backend: Backend, path: Path | None = None
) -> OpenCLMapping:
    """Read and validate the mapping of leaf `hwd` to `backend` (errors carry the file and
    the key). By backend name: `mcl.backends.load_mapping`."""
    language = backend.name
    path = path or mapping_path(hwd, language)
    if not path.is_file():
        title = backend.title
        vocabulary = backend.vocabulary
        found = vocabulary.fallback(hwd) if vocabulary.fallback is not None else None
        if found is not None:
            return parse_mapping(found[0], found[1], backend, hwd)
        original_hint = vocabulary.fallback_hint
        raise MclError(
            error(
                "codegen-no-mapping",
                f"'{hwd.name}' has no {title} mapping: {path} does not exist",
                hint=f"{title} code is generated only from leaf descriptions that have a "
                f"<name>.{language}.toml next to their .hdl file{original_hint}",
            )
        )
    text = path.read_text(encoding="utf-8")
    return parse_mapping(TABLES.through(text, str(path), lambda: _toml(path, text)),
                         str(path), backend, hwd)


def toml_module() -> Any:
    """Python's TOML parser (`tomli` before Python 3.11)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - pyproject installs tomli there
        import tomli as tomllib
    return tomllib


def _toml(path: Path, text: str) -> dict[str, Any]:
    """The table of mapping file `path`, whose text is `text`."""
    tomllib = toml_module()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MclError(error("codegen-mapping-syntax", f"{path}: {exc}", _file_span(path))) from exc


def parse_mapping(
    data: dict, file: str, backend: Backend, hwd: HardwareDescription | None = None
) -> OpenCLMapping:
    """Validate the TOML data of a mapping file in the words of `backend`; with
    `hwd`, also check that the par_groups and spaces named exist in it and that all of
    them are mapped."""
    problems: list[str] = []
    name = hwd.name if hwd is not None else str(data.get("hwd", Path(file).stem.split(".")[0]))
    words = backend.vocabulary
    keys = {"device_type", "par_groups", "spaces", "hwd", "codegen"}
    _unknown_keys(data, keys | {"arch"} if words.arch is not None else keys, "", problems)
    device_type = data.get("device_type", "all")
    if device_type not in DEVICE_TYPES:
        problems.append(f"device_type: '{device_type}' is not one of {', '.join(DEVICE_TYPES)}")
    arch = data.get("arch") if words.arch is not None else None
    problem = words.arch(arch) if words.arch is not None and arch is not None else None
    if problem is not None:
        problems.append(f"arch: {problem}")
        arch = None
    groups = {
        k: _par_group(k, v, problems, dict(words.roles))
        for k, v in _table(data, "par_groups", problems).items()
    }
    spaces = {
        k: _space(k, v, problems, dict(words.address_spaces), dict(words.barriers))
        for k, v in _table(data, "spaces", problems).items()
    }

    if hwd is not None:
        known_groups = [g.name for g in hwd.par_groups()]
        known_spaces = [s.name for s in hwd.memory_spaces()]
        _names_match("par_groups", groups, known_groups, name, problems)
        _names_match("spaces", spaces, known_spaces, name, problems)
        _roles_follow_hierarchy(known_groups, groups, problems)
    used_dims: dict[int, set[str]] = {}
    for g in groups.values():
        if g is not None:
            used_dims.setdefault(g.dim, set()).add(g.role)
    for dim, roles in used_dims.items():
        if "global" in roles and roles - {"global", "loop"}:
            problems.append(f"par_groups: dimension {dim} mixes role 'global' with {sorted(roles)}")
    codegen = _table(data, "codegen", problems)
    _unknown_keys(codegen, {"unroll", "vector_width", "lanes"}, "codegen.", problems)
    unroll = codegen.get("unroll", DEFAULT_UNROLL)
    if not isinstance(unroll, int) or isinstance(unroll, bool) or unroll < 0:
        problems.append(f"codegen.unroll: {unroll!r} is not a trip count >= 0")
        unroll = DEFAULT_UNROLL
    vector_width = codegen.get("vector_width", 0)
    if vector_width not in (0, 2, 4, 8, 16) or isinstance(vector_width, bool):
        problems.append(f"codegen.vector_width: {vector_width!r} is not 0, 2, 4, 8 or 16")
        vector_width = 0
    lanes = codegen.get("lanes")
    if lanes is not None and not (
        isinstance(lanes, str) and (g := groups.get(lanes)) is not None and g.role == "work-item"
    ):
        problems.append(f"codegen.lanes: {lanes!r} is not a par_group of role 'work-item' here")
        lanes = None
    if lanes is not None and not words.lanes:
        problems.append("codegen.lanes: lanes as vectors are generated for OpenCL only")
        lanes = None
    if problems:
        raise MclError(
            [error("codegen-mapping", f"{file}: {p}", _file_span(Path(file))) for p in problems]
        )
    return OpenCLMapping(
        hwd=name,
        file=file,
        device_type=device_type,
        par_groups={k: v for k, v in groups.items() if v is not None},
        spaces={k: v for k, v in spaces.items() if v is not None},
        unroll=unroll,
        vector_width=vector_width,
        lanes=lanes,
        arch=arch,
        backend=backend,
    )


def _file_span(path: Path) -> Span:
    return Span.point(str(path), 1, 1)


def _table(data: dict, key: str, problems: list[str]) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        problems.append(f"{key}: expected a table")
        return {}
    return value


def _unknown_keys(table: dict, allowed: set[str], where: str, problems: list[str]) -> None:
    for key in table:
        if key not in allowed:
            hint = did_you_mean(key, allowed)
            problems.append(f"{where}{key}: unknown key" + (f" ({hint})" if hint else ""))


def _par_group(
    name: str, entry: object, problems: list[str], roles: dict[str, str]
) -> ParGroupMapping | None:
    where = f"par_groups.{name}"
    if not isinstance(entry, dict):
        problems.append(f'{where}: expected a table such as {{ role = "work-item", dim = 0 }}')
        return None
    _unknown_keys(entry, {"role", "dim", "group_size"}, where + ".", problems)
    word = entry.get("role")
    if word not in roles:
        problems.append(f"{where}.role: '{word}' is not one of {', '.join(roles)}")
        return None
    role = roles[word]
    dim = entry.get("dim", 0)
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 <= dim <= 2:
        problems.append(f"{where}.dim: {dim!r} is not an NDRange dimension 0, 1 or 2")
        return None
    group_size = entry.get("group_size")
    if role == "global":
        if not isinstance(group_size, int) or isinstance(group_size, bool) or group_size < 1:
            problems.append(f"{where}.group_size: role '{word}' needs a positive group_size")
            return None
    elif group_size is not None:
        problems.append(f"{where}.group_size: only role 'global' takes a group_size")
    return ParGroupMapping(role=role, dim=dim, group_size=group_size)


def _space(
    name: str,
    entry: object,
    problems: list[str],
    address_spaces: dict[str, str],
    barriers: dict[str, str],
) -> SpaceMapping | None:
    where = f"spaces.{name}"
    if not isinstance(entry, dict):
        problems.append(f'{where}: expected a table such as {{ address_space = "global" }}')
        return None
    _unknown_keys(entry, {"address_space", "barrier"}, where + ".", problems)
    address_space = entry.get("address_space")
    if address_space not in address_spaces:
        problems.append(
            f"{where}.address_space: '{address_space}' is not one of {', '.join(address_spaces)}"
        )
        return None
    barrier = entry.get("barrier")
    if barrier is not None and barrier not in barriers:
        problems.append(f"{where}.barrier: '{barrier}' is not one of {', '.join(barriers)}")
        return None
    return SpaceMapping(
        address_space=address_spaces[address_space],
        barrier=barriers[barrier] if barrier is not None else None,
    )


def _names_match(
    key: str, mapped: dict, known: list[str], hwd_name: str, problems: list[str]
) -> None:
    for name in mapped:
        if name not in known:
            hint = did_you_mean(name, known)
            problems.append(
                f"{key}.{name}: '{hwd_name}' has no {key[:-1]} '{name}'"
                + (f" ({hint})" if hint else "")
            )
    for name in known:
        if name not in mapped:
            problems.append(f"{key}: {key[:-1]} '{name}' of '{hwd_name}' is not mapped")


def _roles_follow_hierarchy(
    chain: list[str], groups: dict[str, ParGroupMapping | None], problems: list[str]
) -> None:
    """Work-groups enclose work-items, and loops run inside a work-item: along the
    par_group chain (outermost first) the roles may only move in that order."""
    order = {"work-group": 0, "global": 1, "work-item": 1, "loop": 2}
    last = -1
    for name in chain:
        g = groups.get(name)
        if g is None:
            continue
        if order[g.role] < last:
            problems.append(
                f"par_groups.{name}: role '{g.role}' cannot lie inside a par_group with a "
                "role that comes later (work-group, then work-item/global, then loop)"
            )
        last = max(last, order[g.role])
