"""The C host harness of the OpenMP backend (`mcl codegen --lang openmp`; paper 4.4:
code "for setting up the execution ... so that the generated code can easily be included
in many applications").

For module `m` it writes:
  m.c         the kernels (C with OpenMP), as `mcl run --backend openmp` compiles them;
  m.h         one function per MCPL kernel function, `double m_FUNCTION(...)`, taking the
              host arrays and sizes: it runs the host statements (launch sizes, scalar
              arguments) and calls each kernel on the arrays themselves (one address
              space: nothing is copied), and returns the kernels' time in seconds;
  m_host.c    those functions (one translation unit with m.c: the host code computes
              with the kernels' constants);
  main.c      an example driver, as the C++ harness's: `m_main FUNCTION DIR
              [NAME=VALUE ...]` reads each array from DIR/NAME.bin (a missing file gives
              zeros) and writes each array the function writes to DIR/NAME.out.bin;
  CMakeLists.txt  builds the library m_mcl and the driver with the compiler's OpenMP
              (find_package(OpenMP)), for this machine's CPU (-march=native).
A kernel whose private arrays are sized by the function's parameters (`MCL_SIZE_x`,
fixed when C is compiled) is built with its size 1 unless the build defines it
(`cmake -DCMAKE_C_FLAGS=-DMCL_SIZE_x=64`): the host function checks the size before the
call and returns -1 with a message otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcl.backends.opencl.host import OPENCL_HOST
from mcl.backends.openmp.dialect import OPENMP
from mcl.codegen.c_expr import ExprPrinter
from mcl.codegen.c_names import c_name
from mcl.codegen.ctree import where
from mcl.codegen.host_cpp import DRIVER_RULES, FunctionWriter, _host_scope, cpp_type
from mcl.codegen.plan import FunctionPlan, GeneratedModule, KernelPlan
from mcl.diagnostics import MclError, error

I = "    "  # noqa: E741 - one indentation step


def host_function(g: GeneratedModule, f: FunctionPlan) -> str:
    return f"{c_name(g.name)}_{c_name(f.name)}"


def _signature(g: GeneratedModule, f: FunctionPlan) -> str:
    params = []
    for p in f.params:
        t = "void" if p.is_struct else cpp_type(p.element)
        if p.is_array:
            params.append(f"{'' if p.written else 'const '}{t}* {c_name(p.name)}")
        elif p.is_struct:
            raise MclError(error(
                "codegen-openmp-struct", f"parameter '{p.name}' of {f.name} is a value of "
                f"type {p.element}; the C harness passes arrays and primitive scalars only",
                f.function.span))
        else:
            params.append(f"{t} {c_name(p.name)}")
    return f"double {host_function(g, f)}({', '.join(params) or 'void'})"


@dataclass
class CFunctionWriter(FunctionWriter):
    """The host function of one MCPL function, in C."""

    def __post_init__(self) -> None:
        # OpenCL's spellings of the built-ins, which the kernel file's prelude defines in C.
        self.printer = ExprPrinter(_host_scope(self.g, self.f), OPENMP,
                                   float_suffix="" if self.g.uses_double else "f")

    def lines(self) -> list[str]:
        f = self.f
        out = [f"// {f.name}{where(f.function.span).replace('  //', ',')}",
               _signature(self.g, f), "{", f"{I}double seconds = 0.0;"]
        for s in f.host_body:
            out += self.stmt(s, 1)
        return [*out, f"{I}return seconds;", "}", ""]

    def launch(self, k: KernelPlan, depth: int) -> list[str]:
        pad, inner = I * depth, I * (depth + 1)
        out = [f"{pad}{{  // kernel {k.name}{where(k.span).replace('  //', ',')}"]
        for macro, size in k.defines:
            out += [
                f"{inner}if ((int)({self.x(size)}) > {macro}) {{",
                f'{inner}{I}fprintf(stderr, "{k.name}: build with -D{macro}=%d\\n", '
                f"(int)({self.x(size)}));",
                f"{inner}{I}return -1.0;",
                f"{inner}}}",
            ]
        groups = [f"(int)({self.x(e)})" for e in k.groups]
        local = [f"(int)({self.x(e)})" for e in k.local]
        sizes = ", ".join([*groups, *local])
        out.append(f"{inner}const int mcl_sizes[{len(groups) + len(local)}] = {{{sizes}}};")
        positive = " && ".join(f"mcl_sizes[{i}] > 0" for i in range(len(groups) + len(local)))
        args = [c_name(a.name) for a in k.args]
        args += [f"mcl_sizes[{i}]" for i in range(len(groups) + len(local))]
        out += [
            f"{inner}if ({positive}) {{  // a foreach with no units runs nothing",
            f"{inner}{I}const double mcl_start = omp_get_wtime();",
            f"{inner}{I}{k.name}({', '.join(args)});",
            f"{inner}{I}seconds += omp_get_wtime() - mcl_start;",
            f"{inner}}}",
            f"{pad}}}",
        ]
        return out


def emit_header(g: GeneratedModule) -> str:
    guard = f"MCL_{c_name(g.name).upper()}_H"
    out = [
        f"// Host interface generated by mcl for module {g.name} at {g.target} (C with "
        "OpenMP).",
        "// Each function runs the kernels of one MCPL function on the arrays it is given",
        "// (written arrays in place) and returns the kernels' time in seconds.",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
    ]
    for f in g.functions:
        fn = f.function
        out.append(f"// {fn.name}{where(fn.span).replace('  //', ',')}: {len(f.kernels)} kernel(s)")
        out += [_signature(g, f) + ";", ""]
    return "\n".join([*out, f"#endif  // {guard}", ""])


def emit_host(g: GeneratedModule) -> str:
    out = [
        f"// Host code generated by mcl for module {g.name} at {g.target}: the kernels and",
        "// the host statements of each function in one translation unit.",
        f'#include "{g.name}.c"',
        f'#include "{g.name}.h"',
        "",
        "#include <omp.h>",
        "#include <stdio.h>",
        "",
    ]
    for f in g.functions:
        # FunctionWriter's host statements are C; its device API (the C++ harness's) is
        # not used: this writer's `lines` and `launch` call the kernels directly.
        out += CFunctionWriter(g, f, OPENCL_HOST).lines()
    return "\n".join(out)


def emit_main(g: GeneratedModule) -> str:
    name = c_name(g.name)
    out = [
        f"// Example driver generated by mcl for module {g.name} at {g.target}:",
        f"//   {name}_main FUNCTION DIR [NAME=VALUE ...]",
        *DRIVER_RULES,
        f'#include "{g.name}.h"',
        "",
        "#include <errno.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "",
        "static int nr_values;",
        "static char** values;",
        "static const char* folder;",
        "",
        "static const char* text_of(const char* name)",
        "{",
        f"{I}size_t length = strlen(name);",
        f"{I}for (int i = 0; i < nr_values; i++) {{",
        f"{I}{I}if (strncmp(values[i], name, length) == 0 && values[i][length] == '=')",
        f"{I}{I}{I}return values[i] + length + 1;",
        f"{I}}}",
        f'{I}fprintf(stderr, "error: missing argument %s=VALUE\\n", name);',
        f"{I}exit(1);",
        "}",
        "",
        "static long long integer(const char* name, long long low, long long high)",
        "{",
        f"{I}const char* text = text_of(name);",
        f"{I}char* end = NULL;",
        f"{I}errno = 0;",
        f"{I}long long v = strtoll(text, &end, 10);",
        f"{I}if (*text == '\\0' || *end != '\\0') {{",
        f'{I}{I}fprintf(stderr, "error: %s=%s: not an integer\\n", name, text);',
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}if (errno == ERANGE || v < low || v > high) {{",
        f'{I}{I}fprintf(stderr, "error: %s=%s: out of the range of its type\\n", name, text);',
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}return v;",
        "}",
        "",
        "static double real(const char* name)",
        "{",
        f"{I}const char* text = text_of(name);",
        f"{I}char* end = NULL;",
        f"{I}double v = strtod(text, &end);",
        f"{I}if (*text == '\\0' || *end != '\\0') {{",
        f'{I}{I}fprintf(stderr, "error: %s=%s: not a number\\n", name, text);',
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}return v;",
        "}",
        "",
        "/* The NAME=VALUE arguments must name scalar parameters of the function called. */",
        "static void known(const char* function, const char* const* names, int count,",
        "                  const char* list)",
        "{",
        f"{I}for (int i = 0; i < nr_values; i++) {{",
        f"{I}{I}int found = 0;",
        f"{I}{I}for (int k = 0; k < count; k++) {{",
        f"{I}{I}{I}size_t length = strlen(names[k]);",
        (f"{I}{I}{I}found = found || (strncmp(values[i], names[k], length) == 0"
         " && values[i][length] == '=');"),
        f"{I}{I}}}",
        f"{I}{I}if (!found) {{",
        f'{I}{I}{I}fprintf(stderr, "error: unknown argument %s: %s takes %s\\n", values[i],',
        f"{I}{I}{I}        function, list);",
        f"{I}{I}{I}exit(1);",
        f"{I}{I}}}",
        f"{I}}}",
        "}",
        "",
        "static void* input(const char* name, long long count, size_t size, int read)",
        "{",
        f"{I}if (count < 0) {{",
        (f'{I}{I}fprintf(stderr, "error: %s would have %lld elements: check the sizes'
         ' given\\n", name, count);'),
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}size_t bytes = (size_t)count * size;",
        f"{I}void* data = calloc(bytes > 0 ? bytes : 1, 1);",
        f"{I}if (!read) return data; /* only written by the function */",
        f"{I}char path[4096];",
        f'{I}snprintf(path, sizeof path, "%s/%s.bin", folder, name);',
        f'{I}FILE* file = fopen(path, "rb");',
        f"{I}if (!file) {{",
        f'{I}{I}fprintf(stderr, "error: cannot read %s (the input %s)\\n", path, name);',
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}if (fread(data, 1, bytes, file) != bytes || fgetc(file) != EOF) {{",
        (f'{I}{I}fprintf(stderr, "error: %s does not hold exactly %lld elements of %zu'
         ' bytes\\n", path, count, size);'),
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}fclose(file);",
        f"{I}return data;",
        "}",
        "",
        "static void output(const char* name, const void* data, long long count, size_t size)",
        "{",
        f"{I}char path[4096];",
        f'{I}snprintf(path, sizeof path, "%s/%s.out.bin", folder, name);',
        f'{I}FILE* file = fopen(path, "wb");',
        f"{I}if (!file || fwrite(data, size, (size_t)count, file) != (size_t)count) {{",
        f'{I}{I}fprintf(stderr, "error: cannot write %s\\n", path);',
        f"{I}{I}exit(1);",
        f"{I}}}",
        f"{I}fclose(file);",
        "}",
        "",
        "int main(int argc, char** argv)",
        "{",
        f"{I}if (argc < 3) {{",
        f'{I}{I}fprintf(stderr, "usage: %s FUNCTION DIR [NAME=VALUE ...]\\n", argv[0]);',
        f"{I}{I}return 2;",
        f"{I}}}",
        f"{I}const char* function = argv[1];",
        f"{I}folder = argv[2];",
        f"{I}values = argv + 3;",
        f"{I}nr_values = argc - 3;",
        f"{I}for (int i = 0; i < nr_values; i++) {{",
        f"{I}{I}if (values[i][0] == '-' || strchr(values[i], '=') == NULL) {{",
        (f'{I}{I}{I}fprintf(stderr, "error: unknown argument %s\\nusage: %s FUNCTION DIR'
         ' [NAME=VALUE ...]\\n", values[i], argv[0]);'),
        f"{I}{I}{I}return 2;",
        f"{I}{I}}}",
        f"{I}}}",
        f"{I}double seconds = 0.0;",
    ]
    for k, f in enumerate(g.functions):
        out.append(f'{I}{"" if k == 0 else "else "}if (strcmp(function, "{f.name}") == 0) {{')
        out += [f"{I}{I}{line}" for line in _main_call(g, f)]
        out.append(f"{I}}}")
    out += [
        f"{I}else {{",
        f'{I}{I}fprintf(stderr, "error: no function %s in module {g.name}\\n", function);',
        f"{I}{I}return 1;",
        f"{I}}}",
        f"{I}if (seconds < 0) return 1;",
        f'{I}printf("%s: kernel time %.6f ms (C with OpenMP)\\n", function, seconds * 1e3);',
        f"{I}return 0;",
        "}",
        "",
    ]
    return "\n".join(out)


# The values a NAME=VALUE of an integral parameter may take (C's int, MCPL's byte and bool).
_INTEGER_RANGES = {"int": "-2147483647LL - 1, 2147483647LL", "byte": "0, 255", "bool": "0, 1"}


def _main_call(g: GeneratedModule, f: FunctionPlan) -> list[str]:
    printer = ExprPrinter(_host_scope(g, f), OPENMP,
                          float_suffix="" if g.uses_double else "f")
    scalars = [p.name for p in f.params if not p.is_array and not p.is_struct]
    names = ", ".join(f'"{n}"' for n in scalars) or "NULL"
    lines = [f"static const char* const names[] = {{{names}}};",
             f'known("{f.name}", names, {len(scalars)}, "{", ".join(scalars) or "no scalars"}");']
    for p in f.params:  # scalars first: the sizes of arrays are expressions in them
        if not p.is_array:
            t = cpp_type(p.element)
            low_high = _INTEGER_RANGES.get(p.element)
            value = (f'integer("{p.name}", {low_high})' if low_high is not None
                     else f'real("{p.name}")')
            lines.append(f"{t} {c_name(p.name)} = ({t}){value};")
    for p in f.params:
        if p.is_array:
            t = "unsigned char" if p.is_struct else cpp_type(p.element)
            assert p.size is not None  # an array parameter has a size
            n = c_name(p.name)
            lines += [f"long long {n}_count = (long long)({printer.expr(p.size)});",
                      f'{t}* {n} = ({t}*)input("{p.name}", {n}_count, sizeof({t}), '
                      f"{1 if 'r' in p.access else 0});"]
    args = [c_name(p.name) for p in f.params]
    lines.append(f"seconds = {host_function(g, f)}({', '.join(args)});")
    lines += [f'output("{p.name}", {c_name(p.name)}, {c_name(p.name)}_count, '
              f"sizeof(*{c_name(p.name)}));" for p in f.params if p.is_array and p.written]
    return lines


def emit_cmake(g: GeneratedModule) -> str:
    name = c_name(g.name)
    return f"""# Generated by mcl for module {g.name} at {g.target} (C with OpenMP).
cmake_minimum_required(VERSION 3.10)
project({name}_mcl LANGUAGES C)

find_package(OpenMP REQUIRED)

if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
string(APPEND CMAKE_C_FLAGS_RELEASE " -O3")
# The kernels' vector types become the widest vectors of the CPU that builds them.
option(MCL_NATIVE "build for this machine's CPU (-march=native)" ON)
if(MCL_NATIVE)
  add_compile_options(-march=native)
endif()

# The host interface of the module: include {g.name}.h and link {name}_mcl
# ({g.name}_host.c includes the kernels of {g.name}.c).
add_library({name}_mcl {g.name}_host.c)
target_include_directories({name}_mcl PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}})
target_link_libraries({name}_mcl PUBLIC OpenMP::OpenMP_C m)

# The example driver: {name}_main FUNCTION DIR [NAME=VALUE ...]
add_executable({name}_main main.c)
target_link_libraries({name}_main PRIVATE {name}_mcl)
"""


@dataclass(frozen=True)
class CHarness:
    generated: GeneratedModule

    def files(self) -> dict[str, str]:
        g = self.generated
        return {
            f"{g.name}.c": g.source,
            f"{g.name}.h": emit_header(g),
            f"{g.name}_host.c": emit_host(g),
            "main.c": emit_main(g),
            "CMakeLists.txt": emit_cmake(g),
        }
