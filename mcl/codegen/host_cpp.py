"""The C++ host harness (paper 4.4: "header files, and C++ code for setting up the
execution on a many-core device. This means that the generated code can easily be
included in many applications").

For module `m` it writes:
  m.h / m.cpp     one function per MCPL kernel function, taking host arrays and sizes: it
                  creates the buffers, runs the host statements (launch sizes, scalar
                  arguments), launches each kernel with its NDRange, reads the written
                  arrays back and returns the kernel time (OpenCL profiling events);
  mcl_opencl.h    the fixed runtime (device selection, build, checked calls);
  main.cpp        an example driver: inputs from binary files, outputs to binary files;
  CMakeLists.txt  find_package(OpenCL), a library and the example executable.
That is OpenCL's harness (mcl.backends.opencl.host); a backend whose host program is C++
(CUDA's: m.cu, mcl_cuda.h with the driver API and NVRTC, a CMake project with LANGUAGES
CXX CUDA) writes the same files with the spellings of its `HostApi`: the host code
differs only there. `emit_harness` asks the module's backend for its harness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcl.codegen.c_expr import ATOM, CLanguage, ExprPrinter
from mcl.codegen.c_names import c_name
from mcl.codegen.constants import used_constants
from mcl.codegen.ctree import (
    CodeLine,
    Comment,
    Compound,
    ForLoop,
    FunctionDef,
    Node,
    TreePrinter,
    where,
)
from mcl.codegen.plan import FunctionPlan, GeneratedModule, HostStmt, KernelPlan, Launch, ParamPlan
from mcl.codegen.scope import CScope, CVar
from mcl.diagnostics import MclError, error
from mcl.mcpl import ast
from mcl.mcpl.ast import (
    ArrayType,
    Assign,
    Binary,
    Block,
    Call,
    Decl,
    Expr,
    For,
    If,
    IncDec,
    NamedType,
    Prim,
)
from mcl.mcpl.builtins import CFunction
from mcl.mcpl.visitor import unknown_node

if TYPE_CHECKING:
    pass

I = "    "  # noqa: E741 - one indentation step

# MCPL primitive -> C++ type on the host (bool is stored as a byte, as in the buffers).
CPP_TYPES = {
    "int": "int",
    "float": "float",
    "double": "double",
    "byte": "unsigned char",
    "bool": "unsigned char",
}


class HostCpp(CLanguage):
    """The host's C++: `std::` math, and atomics as plain updates (one thread)."""

    std = "std::"
    plain_atomics = True

    def builtin(self, c: CFunction) -> str:
        return c.host

    def power(self, p: ExprPrinter, e: Binary, int_exponent: bool) -> str:
        return f"std::pow({p.expr(e.left)}, {p.expr(e.right)})"

    def sincos(self, p: ExprPrinter, x: str, cosine: Expr) -> str:
        return f"({p.expr(cosine)} = std::cos({x}), std::sin({x}))"

    def atomic(self, p: ExprPrinter, e: Call, target_t: object, space: str, pointer: str,
               operands: list[str]) -> str:
        raise AssertionError("plain_atomics: the printer updates the target itself")


HOST_CPP = HostCpp()


@dataclass(frozen=True)
class HostApi:
    """The spellings of a C++ harness that depend on the device API: the generated host
    code is otherwise the same for every backend that uses it (OpenCL's mcl_opencl.h,
    CUDA's mcl_cuda.h with the driver API and NVRTC)."""

    title: str  # the backend's title ("OpenCL")
    runtime: str  # the runtime header's file name
    suffix: str  # of the kernel module file
    program: str  # C++ type of a built program (module)
    release_program: str
    buffer: str  # C++ type of a device buffer
    release_buffer: str
    declare_status: tuple[str, ...]  # lines at the start of a launch
    create_kernel: tuple[str, ...]  # lines; {program} and {name} are filled in
    release_kernel: tuple[str, ...]
    arg_types: dict[str, str]  # MCPL primitive -> type of a scalar kernel argument
    flags: tuple[str, str]  # buffer flags (read-only, read-write); empty for none
    source_variable: str  # the embedded kernel source
    runtime_text: str  # the runtime header
    cmake: Callable[[GeneratedModule], str]  # the CMakeLists.txt of a module


def cpp_type(element: str) -> str:
    return CPP_TYPES.get(element, element)  # user types keep their name


def namespace(g: GeneratedModule) -> str:
    return f"mcl::{c_name(g.name)}"


@dataclass(frozen=True)
class HarnessFiles:
    header: str
    source: str
    main: str
    cmake: str
    runtime: str
    kernels: str  # the kernel source (GeneratedModule.source)
    name: str
    api: HostApi

    def files(self) -> dict[str, str]:
        """File name -> contents, as `mcl codegen` writes them."""
        name = self.name
        return {
            f"{name}{self.api.suffix}": self.kernels,
            f"{name}.h": self.header,
            f"{name}.cpp": self.source,
            self.api.runtime: self.runtime,
            "main.cpp": self.main,
            "CMakeLists.txt": self.cmake,
        }


def cpp_harness(g: GeneratedModule, api: HostApi) -> HarnessFiles:
    """The C++ harness of `g` with the spellings of device API `api`."""
    return HarnessFiles(
        emit_header(g, api),
        emit_source(g, api),
        emit_main(g),
        api.cmake(g),
        api.runtime_text,
        g.source,
        g.name,
        api,
    )


# ---------------------------------------------------------------------- header


def _signature(g: GeneratedModule, f: FunctionPlan) -> str:
    params = ["Module& module"]
    for p in f.params:
        t = cpp_type(p.element)
        if p.is_array:
            params.append(f"{'' if p.written else 'const '}{t}* {c_name(p.name)}")
        else:
            params.append(f"{t} {c_name(p.name)}")
    return f"double {c_name(f.name)}({', '.join(params)})"


def emit_header(g: GeneratedModule, api: HostApi) -> str:
    guard = f"MCL_{c_name(g.name).upper()}_H"
    out = [
        f"// Host interface generated by mcl for module {g.name} at {g.target}.",
        (f"// Open a Module once (it builds the {api.title} kernels on the chosen device),"
         " then call"),
        "// the functions: they copy the arrays to the device, run the kernels, copy the",
        "// written arrays back and return the kernel time in seconds.",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        f'#include "{api.runtime}"',
        "",
        "#include <map>",
        "#include <string>",
        "",
        f"namespace {namespace(g)} {{",
        "",
    ]
    printer = _printer(g, CScope({}, {}, g.tables))
    for t in g.types:
        fields = []
        for d in t.fields:
            if isinstance(d.type, ArrayType):
                size = " * ".join(printer.wrap(x, ATOM) for grp in d.type.dims for x in grp)
                fields.append(f"{I}{cpp_type(d.type.element.name)} {d.name}[{size}];")
            else:
                fields.append(f"{I}{cpp_type(d.type.name)} {d.name};")
        out += [f"struct {t.name} {{", *fields, "};", ""]
    out += [
        "struct Module {",
        f"{I}mcl::Context context;",
        f"{I}{api.program} program = nullptr;",
        f"{I}// Programs built for the sizes of private arrays (-D MCL_SIZE_...), by options.",
        f"{I}std::map<std::string, {api.program}> specialised;",
        "};",
        "",
        '// device_spec as `mcl run --device`: "P:D", "N", or a name such as "nvidia";',
        "// nullptr reads MCL_DEVICE and defaults to the PoCL CPU device.",
        "Module open(const char* device_spec = nullptr);",
        "void close(Module& module);",
        "",
    ]
    for f in g.functions:
        fn = f.function
        out.append(f"// {fn.name}{where(fn.span).replace('  //', ',')}: {len(f.kernels)} kernel(s)")
        out.append(_signature(g, f) + ";")
        out.append("")
    out += [f"}}  // namespace {namespace(g)}", "", f"#endif  // {guard}", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------- source


def _printer(g: GeneratedModule, scope: CScope) -> ExprPrinter:
    return ExprPrinter(scope, HOST_CPP, float_suffix="" if g.uses_double else "f")


def _host_scope(g: GeneratedModule, f: FunctionPlan) -> CScope:
    scope = CScope({t.name: t for t in g.types}, {}, g.tables)
    for c in g.constants:
        scope.declare(CVar(c.name, c.type, kind="constant"))
    for p in f.function.params:
        scope.declare(CVar(p.name, p.type, kind="param"))
    for hv in f.host_vars:
        scope.declare(CVar(hv.name, Prim(hv.element), kind="host"))
    return scope


def _host_exprs(f: FunctionPlan) -> list[object]:
    """Everything the host evaluates: array sizes, host statements, NDRanges, __local sizes."""
    items: list[object] = [p.size for p in f.params if p.size is not None]
    items += list(f.host_body)
    for k in f.kernels:
        items += [*k.groups, *k.local, *(a.size for a in k.args if a.kind == "local" and a.size)]
    return items


def _used_constants(g: GeneratedModule) -> list[Decl]:
    """The constants the host code of any function computes with."""
    return used_constants(g.constants, (item for f in g.functions for item in _host_exprs(f)
                                        if not isinstance(item, Launch)))


def emit_source(g: GeneratedModule, api: HostApi) -> str:
    out = [
        f"// Host code generated by mcl for module {g.name} at {g.target}.",
        f'#include "{g.name}.h"',
        "",
        "#include <cmath>",
        "",
        f"namespace {namespace(g)} {{",
        "",
        "namespace {",
        "",
        (f"// The {api.title} kernels ({g.name}{api.suffix}), embedded so the harness needs no"
         " files at run time."),
        f'const char* const {api.source_variable} = R"MCL_OPENCL(\n{g.source})MCL_OPENCL";',
        "",
    ]
    constants = _used_constants(g)
    if constants:
        printer = _printer(g, CScope({}, {}, g.tables))
        for c in constants:
            # the OpenCL emitter has checked them: scalars with a value
            assert isinstance(c.type, Prim | NamedType) and c.init is not None
            printer.scope.declare(CVar(c.name, c.type, kind="constant"))
            out.append(
                f"constexpr {cpp_type(c.type.name)} {c_name(c.name)} = {printer.expr(c.init)};"
            )
        out.append("")
    out += [
        "// The program built with `options` (sizes of private arrays), built once.",
        f"{api.program} program_for(Module& module, const std::string& options)",
        "{",
        f"{I}if (options.empty()) return module.program;",
        f"{I}auto found = module.specialised.find(options);",
        f"{I}if (found != module.specialised.end()) return found->second;",
        (f"{I}{api.program} program = mcl::build_program(module.context, {api.source_variable},"
         " options.c_str());"),
        f"{I}module.specialised[options] = program;",
        f"{I}return program;",
        "}",
        "",
        "}  // namespace",
        "",
        "Module open(const char* device_spec)",
        "{",
        f"{I}Module module;",
        f"{I}module.context = mcl::open_context(device_spec);",
        f"{I}module.program = mcl::build_program(module.context, {api.source_variable});",
        f"{I}return module;",
        "}",
        "",
        "void close(Module& module)",
        "{",
        f"{I}for (auto& entry : module.specialised) {api.release_program}(entry.second);",
        f"{I}module.specialised.clear();",
        f"{I}if (module.program) {api.release_program}(module.program);",
        f"{I}module.program = nullptr;",
        f"{I}mcl::close_context(module.context);",
        "}",
        "",
    ]
    for f in g.functions:
        out += FunctionWriter(g, f, api).lines()
    out += [f"}}  // namespace {namespace(g)}", ""]
    return "\n".join(out)


@dataclass
class FunctionWriter:
    g: GeneratedModule
    f: FunctionPlan
    api: HostApi

    def __post_init__(self) -> None:
        self.printer = _printer(self.g, _host_scope(self.g, self.f))

    def x(self, e: Expr) -> str:
        return self.printer.expr(e)

    def lines(self) -> list[str]:
        """The host function's lines, then an empty one."""
        f = self.f
        tree = FunctionDef(f.name, f.function.span, self.signature(), self.body())
        return TreePrinter(None).function(tree).split("\n")

    def signature(self) -> str:
        return _signature(self.g, self.f)

    def body(self) -> list[Node]:
        f = self.f
        out: list[Node] = [
            CodeLine("const mcl::Context& ctx = module.context;"),
            CodeLine("double seconds = 0.0;"),
            Comment("One buffer per array parameter, sized by its MCPL declaration."),
        ]
        for p in f.params:
            if p.is_array:
                out += self.buffer(p)
        out.append(Comment("Host statements (outside all foreach) and kernel launches."))
        for s in f.host_body:
            out += self.stmt(s)
        written = [p for p in f.params if p.is_array and p.written]
        if written:
            out.append(Comment("The arrays the function writes, back to the host."))
        for p in written:
            n = c_name(p.name)
            out.append(CodeLine(f"mcl::read_buffer(ctx, {n}_buffer, {n}_bytes, {n});"))
        for p in f.params:
            if p.is_array:
                out.append(CodeLine(f"{self.api.release_buffer}({c_name(p.name)}_buffer);"))
        return [*out, CodeLine("return seconds;")]

    def buffer(self, p: ParamPlan) -> list[Node]:
        n = c_name(p.name)
        api = self.api
        flags = api.flags[1] if p.written else api.flags[0]
        flags = f"{flags}, " if flags else ""
        assert p.size is not None  # a buffer is an array parameter, which has a size
        return [
            CodeLine(f"const size_t {n}_bytes = sizeof({cpp_type(p.element)})"
                 f" * (size_t)({self.x(p.size)});"),
            CodeLine(f"{api.buffer} {n}_buffer = mcl::create_buffer(ctx, {flags}{n}_bytes, {n});"),
        ]

    def stmt(self, s: HostStmt) -> list[Node]:
        match s:
            case Launch():
                return [self.launch(self.f.kernels[s.kernel])]
            case Decl():
                # split_host keeps only scalars on the host
                assert isinstance(s.type, Prim)
                init = f" = {self.x(s.init)}" if s.init is not None else " = 0"
                return [CodeLine(f"{cpp_type(s.type.name)} {c_name(s.name)}{init};", s.span)]
            case Assign():
                return [CodeLine(f"{self.x(s.target)} {s.op} {self.x(s.value)};", s.span)]
            case IncDec():
                return [CodeLine(f"{self.x(s.target)}{s.op};", s.span)]
            case Block():
                return [Compound([(CodeLine("{"), [n for st in s.stmts for n in self.stmt(st)])])]
            case If():
                sections = [(CodeLine(f"if ({self.x(s.cond)}) {{", s.span), self.stmt(s.then))]
                if s.orelse is not None:
                    sections.append((CodeLine("} else {"), self.stmt(s.orelse)))
                return [Compound(sections)]
            case For():
                init, step = (self.header_part(part) for part in (s.init, s.step))
                return [ForLoop([(CodeLine(f"for ({init}; {self.x(s.cond)}; {step}) {{", s.span),
                               self.stmt(s.body))])]
            case (ast.ViewDecl() | ast.CallStmt() | ast.Swap() | ast.Foreach() | ast.Barrier()
                  | ast.Return()):
                # Host code computes scalars (split_host leaves the device statements in
                # the kernels): one here is a plan that cannot run on the host.
                raise MclError(error("codegen-host-stmt",
                                     f"cannot print {type(s).__name__} on the host"))
            case _:
                unknown_node(s, "the host code printer")

    def header_part(self, s: HostStmt) -> str:
        """The init or step of a for loop's header: the code of its statement."""
        line = self.stmt(s)[0]
        assert isinstance(line, CodeLine)  # a declaration, assignment or ++
        return line.text.rstrip(";")

    def launch(self, k: KernelPlan) -> Compound:
        api = self.api
        inside: list[Node] = [CodeLine(line) for line in api.declare_status]
        program = "module.program"
        if k.defines:  # private arrays sized by the kernel's sizes: build for these values
            parts = " + ".join(
                '"'
                + (" " if i else "")
                + f'-D{m}=" + std::to_string(std::max(1, (int)({self.x(e)})))'
                for i, (m, e) in enumerate(k.defines)
            )
            inside.append(CodeLine(f"const std::string options = {parts};"))
            program = "program_for(module, options)"
        inside += [CodeLine(line.format(program=program, name=k.name))
                   for line in api.create_kernel]
        for i, a in enumerate(k.args):
            n = c_name(a.name)
            if a.kind == "buffer":
                inside.append(CodeLine(f"mcl::set_arg(kernel, {i}, {n}_buffer);"))
            elif a.kind == "local":
                assert a.size is not None  # a __local array is sized at launch
                bytes_ = f"sizeof({cpp_type(a.element)}) * (size_t)({self.x(a.size)})"
                inside.append(CodeLine(f"mcl::set_local_arg(kernel, {i}, {bytes_});",
                                   comment=f"__local {a.name}"))
            elif a.is_struct:
                inside.append(CodeLine(f"mcl::set_arg(kernel, {i}, {n});"))
            else:
                inside.append(
                    CodeLine(f"mcl::set_arg<{api.arg_types[a.element]}>(kernel, {i}, {n});"))
        groups = ", ".join(f"(long long)({self.x(e)})" for e in k.groups)
        local = ", ".join(f"(long long)({self.x(e)})" for e in k.local)
        inside += [
            CodeLine(f"const long long groups[{len(k.groups)}] = {{{groups}}};"),
            CodeLine(f"const long long local[{len(k.local)}] = {{{local}}};"),
            CodeLine(f"seconds += mcl::launch(ctx, kernel, {len(k.groups)}, groups, local);"),
            *(CodeLine(line) for line in api.release_kernel),
        ]
        return launch_block(k, inside)


def launch_block(k: KernelPlan, inside: list[Node]) -> Compound:
    """The braces around the launch of kernel `k`, the opening one naming it and its
    foreach nest's MCPL line."""
    return Compound([(CodeLine("{", comment=f"kernel {k.name}{where(k.span).replace('  //', ',')}"),
                      inside)])


# ---------------------------------------------------------------------- example main


# What the example drivers (this C++ one, the OpenMP backend's C one) say of their
# arguments and files, at the top of each.
DRIVER_RULES = (
    "// Scalar parameters come from NAME=VALUE arguments (an integer parameter takes an",
    "// integer, written in full). Each array parameter the function reads is read from",
    "// DIR/NAME.bin (raw native-endian elements, exactly as many as its size); every array",
    "// the function writes is stored in DIR/NAME.out.bin. Prints the kernel time. As strict",
    "// as `mcl run`: a missing or short file, a value that is not a number of the",
    "// parameter's type, a negative size, an unknown argument or an unwritable output is",
    "// an error (exit status 1; 2 for a wrong command line).",
)


def emit_main(g: GeneratedModule) -> str:
    name = c_name(g.name)
    out = [
        f"// Example driver generated by mcl for module {g.name} at {g.target}:",
        f"//   {name}_main FUNCTION DIR [NAME=VALUE ...] [--device SPEC]",
        *DRIVER_RULES,
        f'#include "{g.name}.h"',
        "",
        "#include <cstdio>",
        "#include <fstream>",
        "#include <initializer_list>",
        "#include <iostream>",
        "#include <limits>",
        "#include <map>",
        "#include <stdexcept>",
        "#include <string>",
        "#include <type_traits>",
        "#include <vector>",
        "",
        "namespace {",
        "",
        "std::map<std::string, std::string> values;",
        "std::string folder;",
        "",
        "template <typename T>",
        "T scalar(const std::string& name)",
        "{",
        f"{I}auto it = values.find(name);",
        (f"{I}if (it == values.end())"
         ' throw std::runtime_error("missing argument " + name + "=VALUE");'),
        f"{I}const std::string& text = it->second;",
        f"{I}size_t used = 0;",
        f"{I}if constexpr (std::is_integral<T>::value) {{",
        f"{I}{I}long long v = 0;",
        (f"{I}{I}try {{ v = std::stoll(text, &used); }}"
         " catch (const std::exception&) { used = 0; }"),
        f"{I}{I}if (text.empty() || used != text.size())",
        f'{I}{I}{I}throw std::runtime_error(name + "=" + text + ": not an integer");',
        (f"{I}{I}if (v < (long long)std::numeric_limits<T>::min()"
         " || v > (long long)std::numeric_limits<T>::max())"),
        f'{I}{I}{I}throw std::runtime_error(name + "=" + text + ": out of the range of its type");',
        f"{I}{I}return (T)v;",
        f"{I}}} else {{",
        f"{I}{I}double v = 0.0;",
        (f"{I}{I}try {{ v = std::stod(text, &used); }}"
         " catch (const std::exception&) { used = 0; }"),
        f"{I}{I}if (text.empty() || used != text.size())",
        f'{I}{I}{I}throw std::runtime_error(name + "=" + text + ": not a number");',
        f"{I}{I}return (T)v;",
        f"{I}}}",
        "}",
        "",
        "// The NAME=VALUE arguments must name scalar parameters of the function called.",
        "void known(const std::string& function, std::initializer_list<const char*> names)",
        "{",
        f"{I}for (const auto& entry : values) {{",
        f"{I}{I}bool found = false;",
        f"{I}{I}for (const char* n : names) found = found || entry.first == n;",
        f"{I}{I}if (!found) {{",
        f'{I}{I}{I}std::string list;',
        (f"{I}{I}{I}for (const char* n : names)"
         ' list += (list.empty() ? "" : ", ") + std::string(n);'),
        (f'{I}{I}{I}throw std::runtime_error("unknown argument " + entry.first + "=...: "'
         ' + function + " takes " + (list.empty() ? std::string("no scalars") : list));'),
        f"{I}{I}}}",
        f"{I}}}",
        "}",
        "",
        "template <typename T>",
        "std::vector<T> input(const std::string& name, long long count, bool read)",
        "{",
        f"{I}if (count < 0)",
        (f'{I}{I}throw std::runtime_error(name + " would have " + std::to_string(count)'
         ' + " elements: check the sizes given");'),
        f"{I}std::vector<T> data((size_t)count);",
        f"{I}if (!read) return data;  // only written by the function",
        f'{I}const std::string path = folder + "/" + name + ".bin";',
        f"{I}std::ifstream file(path, std::ios::binary);",
        f"{I}if (!file)",
        f'{I}{I}throw std::runtime_error("cannot read " + path + " (the input " + name + ")");',
        (f"{I}file.read(reinterpret_cast<char*>(data.data()),"
         " (std::streamsize)(data.size() * sizeof(T)));"),
        f"{I}if ((size_t)file.gcount() != data.size() * sizeof(T) || file.peek() != EOF)",
        (f'{I}{I}throw std::runtime_error(path + " does not hold exactly "'
         ' + std::to_string(count) + " elements of " + std::to_string(sizeof(T)) + " bytes");'),
        f"{I}return data;",
        "}",
        "",
        "template <typename T>",
        "void output(const std::string& name, const std::vector<T>& data)",
        "{",
        f'{I}const std::string path = folder + "/" + name + ".out.bin";',
        f"{I}std::ofstream file(path, std::ios::binary);",
        (f"{I}file.write(reinterpret_cast<const char*>(data.data()),"
         " (std::streamsize)(data.size() * sizeof(T)));"),
        f"{I}file.close();",
        f'{I}if (!file) throw std::runtime_error("cannot write " + path);',
        "}",
        "",
        "}  // namespace",
        "",
        "int main(int argc, char** argv)",
        "{",
        (f'{I}const char* usage = " FUNCTION DIR [NAME=VALUE ...] [--device SPEC]\\n";'),
        f"{I}if (argc < 3) {{",
        f'{I}{I}std::cerr << "usage: " << argv[0] << usage;',
        f"{I}{I}return 2;",
        f"{I}}}",
        f"{I}const std::string function = argv[1];",
        f"{I}folder = argv[2];",
        f"{I}const char* device = nullptr;",
        f"{I}for (int i = 3; i < argc; i++) {{",
        f"{I}{I}std::string arg = argv[i];",
        f'{I}{I}if (arg == "--device" && i + 1 < argc) {{',
        f"{I}{I}{I}device = argv[++i];",
        f"{I}{I}}} else if (arg.find('=') != std::string::npos && arg[0] != '-') {{",
        f"{I}{I}{I}values[arg.substr(0, arg.find('='))] = arg.substr(arg.find('=') + 1);",
        f"{I}{I}}} else {{",
        (f'{I}{I}{I}std::cerr << "error: unknown argument " << arg'
         ' << "\\nusage: " << argv[0] << usage;'),
        f"{I}{I}{I}return 2;",
        f"{I}{I}}}",
        f"{I}}}",
        f"{I}try {{",
        f"{I}{I}{namespace(g)}::Module module = {namespace(g)}::open(device);",
        f"{I}{I}double seconds = 0.0;",
    ]
    for k, f in enumerate(g.functions):
        out.append(f'{I}{I}{"" if k == 0 else "else "}if (function == "{f.name}") {{')
        out += [f"{I}{I}{I}{line}" for line in _main_call(g, f)]
        out.append(f"{I}{I}}}")
    out += [
        f"{I}{I}else {{",
        f'{I}{I}{I}throw std::runtime_error("no function " + function + " in module {g.name}");',
        f"{I}{I}}}",
        f'{I}{I}std::printf("%s: kernel time %.6f ms on %s\\n", function.c_str(), seconds * 1e3,',
        f"{I}{I}            module.context.description.c_str());",
        f"{I}{I}{namespace(g)}::close(module);",
        f"{I}}} catch (const std::exception& e) {{",
        f'{I}{I}std::cerr << "error: " << e.what() << "\\n";',
        f"{I}{I}return 1;",
        f"{I}}}",
        f"{I}return 0;",
        "}",
        "",
    ]
    return "\n".join(out)


def _main_call(g: GeneratedModule, f: FunctionPlan) -> list[str]:
    printer = _printer(g, _host_scope(g, f))
    scalars = ", ".join(f'"{p.name}"' for p in f.params if not p.is_array and not p.is_struct)
    lines = [f'known("{f.name}", {{{scalars}}});']
    # Scalars first: the sizes of arrays are expressions in them.
    for p in f.params:
        if not p.is_array:
            t = cpp_type(p.element)
            value = f"{t}{{}}" if p.is_struct else f'scalar<{t}>("{p.name}")'
            lines.append(f"{t} {c_name(p.name)} = {value};")
    for p in f.params:
        if p.is_array:
            t = cpp_type(p.element)
            assert p.size is not None  # an array parameter has a size
            lines.append(
                f'std::vector<{t}> {c_name(p.name)} = input<{t}>("{p.name}", '
                f"(long long)({printer.expr(p.size)}), {'true' if 'r' in p.access else 'false'});"
            )
    args = ["module"] + [
        f"{c_name(p.name)}.data()" if p.is_array else c_name(p.name) for p in f.params
    ]
    lines.append(f"seconds = {namespace(g)}::{c_name(f.name)}({', '.join(args)});")
    lines += [
        f'output("{p.name}", {c_name(p.name)});' for p in f.params if p.is_array and p.written
    ]
    return lines


__all__ = ["HarnessFiles", "HostApi", "cpp_harness"]
