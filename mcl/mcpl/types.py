"""The checker's view of MCPL types (mcpl.md §2-§4, the paper's section 4.3).

The AST keeps types as written (`ArrayType` with size expressions); the checker only needs
their *shape*: the element type and how many indices each bracket group takes. `float[n, m]`
and `float[p, q]` are the same checker type (sizes are symbolic, they are compared by the
feedback analyses, not here), but `float[n, m]` and `float[h][w]` are not: the first is one
2-D array (`c[i, j]`), the second an array of rows (`img[i][j]`).

`UNKNOWN` stands for the type of an expression that already produced an error; it agrees
with everything so that one mistake gives one diagnostic, not a cascade.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcl.mcpl import ast


@dataclass(frozen=True)
class Primitive:
    """One of MCPL's primitive types (mcpl.md §2) and how the rest of the toolchain spells
    and stores it."""

    name: str
    size: int  # bytes in memory (bool is stored as a byte)
    rank: int | None  # in C's usual arithmetic conversions; None: not a number
    opencl: str  # OpenCL C (and CUDA) type
    host: str  # the generated C++ host's type
    buffer_dtype: str  # numpy dtype of a host buffer of this type


# The one table of primitive types: the parser, the checker, code generation, the
# interpreter, the feedback's byte counts and the language server read it.
PRIMITIVES: dict[str, Primitive] = {p.name: p for p in (
    Primitive("void", 0, None, "void", "void", ""),
    # bool is no number (compare explicitly); kernel arguments and buffers hold it as a byte
    Primitive("bool", 1, None, "bool", "cl_uchar", "uint8"),
    Primitive("byte", 1, 0, "uchar", "cl_uchar", "uint8"),  # unsigned 8 bits
    Primitive("int", 4, 1, "int", "cl_int", "int32"),
    Primitive("float", 4, 2, "float", "cl_float", "float32"),
    Primitive("double", 8, 3, "double", "cl_double", "float64"),
)}
PRIMITIVE_NAMES = frozenset(PRIMITIVES)
NUMERIC_RANK = {p.name: p.rank for p in PRIMITIVES.values() if p.rank is not None}
# `int` is a 32-bit signed integer, as in OpenCL C, the language MCPL is generated to:
# literals must fit, and a shift count must lie in 0..INT_BITS-1 (anything else is
# undefined in C).
INT_BITS = 32
INT_MIN = -(2 ** (INT_BITS - 1))
INT_MAX = 2 ** (INT_BITS - 1) - 1
BYTE_MAX = 255  # a byte is unsigned 8 bits (OpenCL's uchar)
# An integer literal of more digits stands for any value past every C type (the parser
# keeps this one value for it, the checker reports it without printing the digits).
HUGE_LITERAL_DIGITS = 40
HUGE_LITERAL = 10**HUGE_LITERAL_DIGITS
INTEGRAL = frozenset({"byte", "int"})
FLOATING = frozenset({"float", "double"})


@dataclass(frozen=True)
class Scalar:
    """A primitive type: void, int, float, double, byte, bool."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Struct:
    """A user type (`type Complex { ... }`), known by name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Array:
    """An array: `groups` holds the number of indices of each bracket group, outermost first
    (`float[n, m]` -> (2,), `int[2,2][3,3]` -> (2, 2))."""

    element: Scalar | Struct | Unknown
    groups: tuple[int, ...]

    def __str__(self) -> str:
        return str(self.element) + "".join("[" + ", ".join("_" * n) + "]" for n in self.groups)

    def after_index(self) -> VType:
        """The type left after indexing the outermost bracket group (a tile, or the element)."""
        rest = self.groups[1:]
        return Array(self.element, rest) if rest else self.element


@dataclass(frozen=True)
class Unknown:
    """The type of an erroneous expression; compatible with every type."""

    def __str__(self) -> str:
        return "?"


VType = Scalar | Struct | Array | Unknown

UNKNOWN = Unknown()
INT = Scalar("int")
FLOAT = Scalar("float")
DOUBLE = Scalar("double")
BOOL = Scalar("bool")
VOID = Scalar("void")


def from_ast(t: ast.Type) -> VType:
    """The checker type of a written type (names of user types are resolved by the caller)."""
    if isinstance(t, ast.Prim):
        return Scalar(t.name)
    if isinstance(t, ast.NamedType):
        return Struct(t.name)
    element = from_ast(t.element)
    assert not isinstance(element, Array)
    return Array(element, tuple(len(g) for g in t.dims))


def is_numeric(t: VType) -> bool:
    return isinstance(t, Unknown) or (isinstance(t, Scalar) and t.name in NUMERIC_RANK)


def is_integral(t: VType) -> bool:
    return isinstance(t, Unknown) or (isinstance(t, Scalar) and t.name in INTEGRAL)


def is_bool(t: VType) -> bool:
    return isinstance(t, Unknown) or t == BOOL


def is_array(t: VType) -> bool:
    return isinstance(t, Array)


def promoted(name: str) -> str:
    """The type a value of the numeric primitive `name` computes in: C's integer
    promotions, a byte (OpenCL's uchar) computes as an int; the others as themselves."""
    return "int" if name == "byte" else name


def arithmetic(a: str, b: str) -> str:
    """The type `a OP b` computes in, for two numeric primitives: C's usual arithmetic
    conversions, both operands promoted, then the wider one (int < float < double). The
    checker's types, the interpreter's arithmetic and code generation's read this rule."""
    a, b = promoted(a), promoted(b)
    return a if NUMERIC_RANK[a] >= NUMERIC_RANK[b] else b


def wider(a: VType, b: VType) -> VType:
    """Result type of arithmetic on two numbers (`arithmetic`: byte + byte is an int)."""
    if not (isinstance(a, Scalar) and isinstance(b, Scalar)):
        return UNKNOWN
    if a.name not in NUMERIC_RANK or b.name not in NUMERIC_RANK:
        return UNKNOWN  # an operand that is not a number was already reported
    return Scalar(arithmetic(a.name, b.name))


def promote(t: VType) -> VType:
    """The type of `-x` and of `abs(x)` for a number `x` (`promoted`); others unchanged."""
    return Scalar(promoted(t.name)) if isinstance(t, Scalar) and t.name in NUMERIC_RANK else t


def floating(t: VType) -> VType:
    """The floating-point type a math built-in returns for an argument of type `t`."""
    if isinstance(t, Scalar) and t.name == "double":
        return DOUBLE
    return FLOAT if is_numeric(t) and not isinstance(t, Unknown) else UNKNOWN


def assignable(target: VType, value: VType) -> bool:
    """May a value of type `value` be stored in a `target`? Numbers convert implicitly except
    from floating point to integers (that needs `toInt`, mcpl.md §4); arrays need the same
    shape and element type because they are passed by reference (section 4.3)."""
    if isinstance(target, Unknown) or isinstance(value, Unknown):
        return True
    if isinstance(target, Array) or isinstance(value, Array):
        return (
            isinstance(target, Array)
            and isinstance(value, Array)
            and target.groups == value.groups
            and (
                isinstance(target.element, Unknown)
                or isinstance(value.element, Unknown)
                or target.element == value.element
            )
        )
    if target == value:
        return True
    if is_numeric(target) and is_numeric(value):
        return not (is_integral(target) and not is_integral(value))
    return False


def conversion_hint(target: VType, value: VType) -> str | None:
    """A hint for a failed `assignable(target, value)`."""
    if is_integral(target) and isinstance(value, Scalar) and value.name in FLOATING:
        return "convert explicitly with toInt(...)"
    if (
        isinstance(target, Array)
        and isinstance(value, Array)
        and target.groups != value.groups
        and sum(target.groups) == sum(value.groups)
    ):
        return (
            "the bracket groups differ: [n, m] is one 2-D array indexed a[i, j], "
            "[n][m] is an array of rows indexed a[i][j]"
        )
    if target == BOOL and is_numeric(value):
        return "compare explicitly, e.g. `x != 0`"
    return None
