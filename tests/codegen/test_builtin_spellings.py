"""Every built-in function says how code generation writes it (mcl/mcpl/builtins.py: `c`,
`c_int`; docs/codegen.md, "Built-ins"), so a built-in added to the table cannot reach the
code generator without a decided OpenCL, CUDA and host spelling."""

from __future__ import annotations

import re

import pytest

from mcl.codegen.c_expr import ATOMICS, C_RULES
from mcl.mcpl.builtins import BUILTINS, CAtomic, CCast, CFunction, CRule
from mcl.resources import mcpl_stdlib_dir


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_has_its_spellings(name: str) -> None:
    builtin = BUILTINS[name]
    c = builtin.c
    if isinstance(c, CFunction):
        assert c.opencl and c.cuda and c.host
    elif isinstance(c, CCast):
        assert c.type in ("float", "int", "double")
    elif isinstance(c, CAtomic):
        assert c.opencl and c.cuda and ATOMICS[name] == c
    else:
        assert isinstance(c, CRule) and c.name in C_RULES, f"{name}: no rule prints it"
    if builtin.c_int is not None:
        # An int overload only where the function on floats is a plain function too.
        assert isinstance(c, CFunction)
        assert builtin.c_int.opencl and builtin.c_int.cuda and builtin.c_int.host


def test_every_library_atomic_has_its_spellings() -> None:
    # lib.atomic's functions are not built-ins; c_expr's ATOMICS spells them.
    text = (mcpl_stdlib_dir() / "lib" / "atomic.mcpl").read_text(encoding="utf-8")
    exported = re.search(r"^export ([^;]*);", text, re.MULTILINE | re.DOTALL)
    assert exported is not None
    names = {n.strip() for n in exported.group(1).split(",")}
    assert names and names <= set(ATOMICS)
    assert all(ATOMICS[n].cuda for n in names)
