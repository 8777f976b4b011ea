"""Translation between abstraction levels: the paper's section 6.1 and Appendix A.

    translate_module(module, target, library) -> TranslationResult(module, notes)

moves every function of a module whose level lies on the path perfect → … → target down
to `target`, one edge of the hierarchy at a time. The parts, in the order of the paper:

- `levels`  — A.1: the path, and errors for upward or sideways requests;
- `module`  — A.1: the driver (TRANSLATEFUNCTIONS / TRANSLATEFUNCTION / TRANSLATE);
- `program` — a loaded program: its main module translated, imported libraries kept;
- `spaces`  — A.3: memory spaces of declarations, parameters and barriers
              (A.2/A.3 equivalences come from `mcl.hdl.equivalence`);
- `foreach` — A.4: re-targeting and splitting foreach statements;
- `guard`   — our addition: guards for counts that do not divide, barriers kept reachable;
- `counts`, `naming` — description constants, static counts, readable generated names.
"""

from mcl.translate.levels import lineage
from mcl.translate.module import TranslationResult, translate_function, translate_module
from mcl.translate.program import translate_program

__all__ = [
    "TranslationResult",
    "lineage",
    "translate_function",
    "translate_module",
    "translate_program",
]
