"""Where foreach statements, executing statements, declarations and barriers may stand
(the paper's section 4.3 and Figure 6; mcpl.md §5 rules 3-5).

"The parallelism block in the hardware description governs how foreach loops can be nested
and where memory spaces can be declared. The nesting has to follow the nesting in the
hardware description with an exception for foreach loops belonging to the same par_group
[...]. Executing statements are only allowed in the innermost foreach loop. For a
declaration of a variable, its nesting must match the nesting of its memory_space."

Everything here asks the resolved hardware description (`mcl.hdl.model`) and returns a
problem as `(message, hint)`, or None; the checker attaches spans and codes. A *level* is
the par_group of the innermost enclosing foreach, or None outside all foreach statements
(the host side, whose scope is the parallelism root).
"""

from __future__ import annotations

from mcl.hdl.model import HardwareDescription, MemorySpace, Parallelism, ParGroup, Scope

Problem = tuple[str, str | None]


def _foreach(group: ParGroup) -> str:
    return f"`foreach (... {group.name})`"


def nesting_problem(
    hwd: HardwareDescription, outer: ParGroup | None, inner: ParGroup
) -> Problem | None:
    """Figure 6: a foreach over `inner` directly inside one over `outer` (None: outside all
    foreach statements) must follow the hierarchy one level at a time; foreach statements
    over the same par_group may nest directly (multi-dimensional parallelism, Fig. 2)."""
    chain = hwd.par_groups()
    if outer is None:
        first = chain[0]
        if inner is first:
            return None
        return (
            f"a foreach over '{inner.name}' must be nested in a foreach over '{first.name}', "
            f"the outermost par_group of '{hwd.name}'",
            f"wrap it in {_foreach(first)}; the hierarchy of '{hwd.name}' is "
            + " > ".join(g.name for g in chain),
        )
    if inner is outer or (outer.unit is not None and outer.unit.inner is inner):
        return None
    position = {g: i for i, g in enumerate(chain)}
    if position.get(inner, 0) < position.get(outer, 0):
        return (
            f"a foreach over '{inner.name}' cannot stand inside a foreach over '{outer.name}': "
            f"'{inner.name}' encloses '{outer.name}' in the hierarchy of '{hwd.name}'",
            "swap the two foreach statements; the hierarchy is "
            + " > ".join(g.name for g in chain),
        )
    skipped = chain[position[outer] + 1 : position[inner]]
    return (
        f"a foreach over '{inner.name}' inside a foreach over '{outer.name}' skips "
        + ", ".join(f"'{g.name}'" for g in skipped)
        + f" in the hierarchy of '{hwd.name}'",
        f"nest {_foreach(skipped[0])} in between",
    )


def level_scope(hwd: HardwareDescription, level: ParGroup | None) -> Scope:
    """The hierarchy scope a statement at `level` runs in: inside a foreach over a par_group
    it is one unit of that group; outside all foreach it is the parallelism root."""
    if level is None or level.unit is None:
        return hwd.parallelism
    return level.unit


def scope_label(scope: Scope) -> str:
    if isinstance(scope, Parallelism):
        return "the top of the hierarchy (outside all foreach statements)"
    kind = "par_group" if isinstance(scope, ParGroup) else "par_unit"
    return f"{kind} '{scope.name}'"


def is_executing_level(hwd: HardwareDescription, level: ParGroup | None) -> bool:
    """Does a foreach over `level` give units of the executing par_unit (hdl.md 3.2)?"""
    return level is not None and level.unit is hwd.executing_unit()


def declarable_spaces(hwd: HardwareDescription, level: ParGroup | None) -> list[MemorySpace]:
    """Memory spaces a declaration at `level` may live in: those declared in the scope of
    that level (the unit, or the par_group directly inside it, whose units share it), and
    the spaces of the parallelism root (device memory, which may hold data of any unit:
    `main float[x] sums;` in a thread)."""
    scope = level_scope(hwd, level)
    allowed: list[Scope] = [scope, hwd.parallelism]
    inner = getattr(scope, "inner", None)
    if inner is not None:
        allowed.append(inner)
    return [s for s in hwd.memory_spaces() if any(s.scope is a for a in allowed)]


PARAMETER, ARRAY, SCALAR = "parameter", "array", "scalar"


def default_space(
    hwd: HardwareDescription, kind: str, level: ParGroup | None
) -> MemorySpace | None:
    """The memory space of a declaration without a space modifier (mcpl.md §3, "Default
    memory spaces"; one rule for the checker, the translation, the feedback and the code
    generator):

    - a parameter (and a module constant): the outermost default space, the memory the
      host passes data in (`dev`, `global`);
    - an array declared in a function: the innermost default space that may be declared
      at its `level` — in the executing unit its registers (`float[4] sums;` in a thread
      is that thread's own, a private array in OpenCL); at an outer level the innermost
      default declarable there (on the host, the outermost);
    - a scalar: the innermost default space (hdl.md 3.2).
    """
    defaults = hwd.default_spaces()
    if not defaults:
        return None
    if kind == PARAMETER:
        return defaults[0]
    if kind == ARRAY:
        allowed = declarable_spaces(hwd, level)
        return next((s for s in reversed(defaults) if s in allowed), defaults[0])
    return defaults[-1]


def effective_spaces(
    hwd: HardwareDescription, spaces: tuple[str, ...], is_array: bool,
    level: ParGroup | None = None,
) -> list[MemorySpace]:
    """The memory spaces a declared variable may live in: the named ones (several
    modifiers mean 'either', mcpl.md §3), else its default one (`default_space`) at
    `level`."""
    if spaces:
        return [s for s in (hwd.memory_space(n) for n in spaces) if s is not None]
    space = default_space(hwd, ARRAY if is_array else SCALAR, level)
    return [space] if space is not None else []


def declaration_problem(
    hwd: HardwareDescription, level: ParGroup | None, spaces: list[MemorySpace]
) -> Problem | None:
    """Figure 6: a declaration's nesting must match the nesting of its memory space."""
    allowed = declarable_spaces(hwd, level)
    if not spaces or any(s in allowed for s in spaces):
        return None
    space = spaces[0]
    where = level_scope(hwd, level)
    problem = (
        f"memory space '{space.name}' is declared in {scope_label(space.scope)}, so a "
        f"declaration in it cannot stand at {scope_label(where)}"
    )
    home = _foreach_level_of(hwd, space.scope)
    if home is not None:
        hint = f"declare it directly inside {_foreach(home)}"
    else:
        hint = "declare it outside all foreach statements"
    names = [s.name for s in allowed]
    if names:
        hint += "; spaces for this level: " + ", ".join(names)
    return problem, hint


def _foreach_level_of(hwd: HardwareDescription, scope: Scope) -> ParGroup | None:
    """The par_group whose foreach body is the level where `scope`'s spaces are declared."""
    if isinstance(scope, ParGroup):
        scope = scope.parent  # a group's spaces are declared at its parent's level
    if isinstance(scope, Parallelism):
        return None
    return scope.group


def barrier_problem(
    hwd: HardwareDescription, level: ParGroup | None, space: MemorySpace
) -> Problem | None:
    """Section 4.3: units communicate through memory declared outside them; `barrier(S)`
    synchronises the units of the innermost enclosing foreach, so S must be shared by them."""
    if level is None:
        return (
            f"barrier({space.name}) stands outside all foreach statements: there are no "
            "units to synchronise",
            "put the barrier inside the foreach whose units share the memory",
        )
    sharing = hwd.shared_by(space.name)
    if any(g is level for g in sharing):
        return None
    usable = [s.name for s in hwd.memory_spaces() if any(g is level for g in hwd.shared_by(s.name))]
    return (
        f"units of '{level.name}' cannot synchronise through memory space '{space.name}': "
        f"it is declared in {scope_label(space.scope)}, not outside them",
        (
            "spaces shared by " + f"'{level.name}': " + ", ".join(usable)
            if usable
            else f"units of '{level.name}' share no memory space"
        ),
    )
