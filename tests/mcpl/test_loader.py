"""The module loader: packages in directories, source roots, description imports, export
visibility, and clear errors for missing modules and import cycles."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.diagnostics import Diagnostic, MclError
from mcl.mcpl.ast import Decl, Function, TypeDef
from mcl.mcpl.loader import ENV_PATH, load_program
from mcl.resources import kernels_dir


class FakeLibrary:
    """Stands in for an HDL library: the loader only asks it for description names."""

    def names(self) -> list[str]:
        return ["perfect", "gpu", "nvidia"]


LIB = FakeLibrary()


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _no_env_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_PATH, raising=False)


def test_lone_file_uses_its_stem_as_module_name(tmp_path: Path) -> None:
    f = write(tmp_path, "matmul.mcpl", "perfect void matmul() { }")
    prog = load_program(f, library=LIB)
    assert list(prog.modules) == ["matmul"]
    assert prog.qualified_name(prog.main) == "matmul"
    assert prog.files["matmul"] == f
    assert prog.hwd_imports == {"matmul": ()}


def test_original_style_program_with_packages_and_the_stdlib(tmp_path: Path) -> None:
    write(
        tmp_path,
        "apps/fft/complex.mcl",
        """package apps.fft;
        module complex;
        export Complex, assign;
        import perfect;
        type Complex { float real; float imag; }
        perfect void assign(Complex r, Complex a) { r.real = a.real; r.imag = a.imag; }
        perfect void helper(Complex r) { r.real = 0.0; }
        """,
    )
    main = write(
        tmp_path,
        "apps/fft/butterfly.mcpl",
        """package apps.fft;
        module butterfly;
        import perfect;
        import lib.math.common;
        import apps.fft.complex;
        perfect void butterflies(int n, main Complex[n] input, main Complex[n] output) {
          foreach (int i in n threads) {
            reg main Complex u0;
            assign(u0, input[i]);
            output[i].real = sqr(u0.real) * PI;
          }
        }
        """,
    )
    prog = load_program(main, library=LIB)
    assert sorted(prog.modules) == ["apps.fft.butterfly", "apps.fft.complex", "lib.math.common"]
    assert prog.hwd_imports["apps.fft.butterfly"] == ("perfect",)
    assert prog.files["apps.fft.complex"].suffix == ".mcl"
    # Resolution from the main module: own names, imported exports, stdlib.
    assign = prog.lookup_function("assign", prog.main)
    assert isinstance(assign, Function) and assign.name == "assign"
    assert prog.module_of(assign) is prog.modules["apps.fft.complex"]
    sqr = prog.lookup_function("sqr", "apps.fft.butterfly")
    assert isinstance(sqr, Function) and sqr.hwd == "perfect"
    complex_type = prog.lookup_type("Complex", prog.main)
    assert isinstance(complex_type, TypeDef) and len(complex_type.fields) == 2
    pi = prog.lookup_constant("PI", prog.main)
    assert isinstance(pi, Decl) and pi.const
    own = prog.lookup_function("butterflies", prog.main)
    assert isinstance(own, Function)
    # Inside a module everything of its own is visible, exported or not.
    helper = prog.lookup_function("helper", "apps.fft.complex")
    assert isinstance(helper, Function)


def test_invisible_and_unknown_names_are_diagnostics(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pkg/util.mcpl",
        """package pkg; module util; export scale;
        perfect float scale(float x) { return 2.0 * x; }
        perfect float secret(float x) { return x; }
        """,
    )
    write(tmp_path, "pkg/other.mcpl", "package pkg; module other;\nperfect void far() { }")
    write(tmp_path, "pkg/mid.mcpl", "package pkg; module mid;\nimport pkg.other;")
    main = write(tmp_path, "main.mcpl", "import pkg.util;\nimport pkg.mid;\nperfect void f() { }")
    prog = load_program(main, library=LIB)

    d = prog.lookup_function("secret", prog.main)
    assert isinstance(d, Diagnostic)
    assert d.message == "function 'secret' of module pkg.util is not exported"
    assert d.hint == "add 'secret' to the export line of pkg.util"

    d = prog.lookup_function("scal", prog.main)
    assert isinstance(d, Diagnostic) and d.code == "mcpl-unknown-function"
    assert d.message == "unknown function 'scal'"
    assert d.hint == "did you mean 'scale'?"

    # Imports are not transitive: main imports mid, mid imports other.
    d = prog.lookup_function("far", prog.main)
    assert isinstance(d, Diagnostic)
    assert d.message == "function 'far' is defined in module pkg.other, which main does not import"
    assert d.hint == "add `import pkg.other;`"

    d = prog.lookup_type("Complx", prog.main)
    assert isinstance(d, Diagnostic) and d.message == "unknown type 'Complx'"

    # Built-in names can join the hint.
    d = prog.lookup_function("sqrtt", prog.main, extra_candidates=["sqrt", "exp"])
    assert d.hint == "did you mean 'sqrt'?"


def test_the_same_name_exported_twice_is_ambiguous(tmp_path: Path) -> None:
    write(tmp_path, "a/one.mcpl", "package a; module one;\nperfect void g() { }")
    write(tmp_path, "a/two.mcpl", "package a; module two;\nperfect void g() { }")
    main = write(tmp_path, "m.mcpl", "import a.one;\nimport a.two;\nperfect void f() { g(); }")
    prog = load_program(main, library=LIB)
    d = prog.lookup_function("g", prog.main)
    assert isinstance(d, Diagnostic) and d.code == "mcpl-ambiguous-function"
    assert d.message == "function 'g' is exported by both a.one and a.two"


def test_own_definition_wins_over_imports(tmp_path: Path) -> None:
    write(tmp_path, "a/one.mcpl", "package a; module one;\nperfect int g() { return 1; }")
    main = write(tmp_path, "m.mcpl", "import a.one;\nperfect int g() { return 2; }")
    prog = load_program(main, library=LIB)
    assert prog.lookup_function("g", prog.main) is prog.main.functions[0]


def test_include_dirs_and_mcl_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inc = tmp_path / "inc"
    env1, env2 = tmp_path / "env1", tmp_path / "env2"
    write(inc, "x/a.mcpl", "package x; module a;\nperfect void fa() { }")
    write(env2, "y/b.mcpl", "package y; module b;\nperfect void fb() { }")
    main = write(tmp_path / "src", "main.mcpl", "import x.a;\nimport y.b;\nperfect void f() { }")
    monkeypatch.setenv(ENV_PATH, f"{env1}{__import__('os').pathsep}{env2}")
    prog = load_program(main, include_dirs=[inc], library=LIB)
    assert prog.files["x.a"] == inc / "x" / "a.mcpl"
    assert prog.files["y.b"] == env2 / "y" / "b.mcpl"
    assert prog.roots[:4] == ((tmp_path / "src").resolve(), inc, env1, env2)


def test_earlier_roots_win(tmp_path: Path) -> None:
    write(tmp_path / "first", "lib/math/common.mcpl", "package lib.math; module common;")
    main = write(tmp_path, "m.mcpl", "import lib.math.common;\nperfect void f() { }")
    prog = load_program(main, include_dirs=[tmp_path / "first"], library=LIB)
    # The -I copy shadows the bundled standard library.
    assert prog.files["lib.math.common"] == tmp_path / "first" / "lib/math/common.mcpl"
    assert prog.modules["lib.math.common"].functions == ()


def test_main_file_inside_a_package_finds_its_siblings(tmp_path: Path) -> None:
    write(tmp_path, "app/k/util.mcpl", "package app.k; module util;\nperfect void u() { }")
    main = write(tmp_path, "app/k/kernel.mcpl", "package app.k; module kernel;\nimport app.k.util;")
    prog = load_program(main, library=LIB)
    assert sorted(prog.modules) == ["app.k.kernel", "app.k.util"]


def test_missing_module_is_an_error_at_the_import(tmp_path: Path) -> None:
    main = write(tmp_path, "m.mcpl", "import perfect;\nimport lib.nothing.here;\n")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "mcpl-unknown-import"
    assert d.message == "module lib.nothing.here not found"
    assert (d.span.file, d.span.line, d.span.column) == (str(main), 2, 1)
    assert "lib/nothing/here.mcpl" in d.hint and "-I DIR" in d.hint


def test_unknown_single_name_import_suggests_a_description(tmp_path: Path) -> None:
    main = write(tmp_path, "m.mcpl", "import nvidai;\nperfect void f() { }")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    (d,) = exc.value.diagnostics
    assert d.message == "'nvidai' is neither a hardware description nor a module"
    assert d.hint == "did you mean 'nvidia'?"


def test_single_name_import_of_a_module(tmp_path: Path) -> None:
    write(tmp_path, "helpers.mcpl", "perfect int twice(int x) { return 2 * x; }")
    main = write(tmp_path, "m.mcpl", "import helpers;\nimport gpu;\nperfect void f() { }")
    prog = load_program(main, library=LIB)
    assert "helpers" in prog.modules
    assert prog.hwd_imports["m"] == ("gpu",)
    assert isinstance(prog.lookup_function("twice", prog.main), Function)


def test_import_cycle_is_an_error_at_the_import(tmp_path: Path) -> None:
    write(tmp_path, "c/a.mcpl", "package c; module a;\nimport c.b;")
    write(tmp_path, "c/b.mcpl", "package c; module b;\n\nimport c.a;")
    main = write(tmp_path, "main.mcpl", "import c.a;\nperfect void f() { }")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "mcpl-import-cycle"
    assert d.message == "import cycle: c.a -> c.b -> c.a"
    assert d.span.file == str(tmp_path / "c" / "b.mcpl") and d.span.line == 3


def test_self_import_is_a_cycle(tmp_path: Path) -> None:
    main = write(tmp_path, "p/s.mcpl", "package p; module s;\nimport p.s;")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    assert exc.value.diagnostics[0].message == "import cycle: p.s -> p.s"


def test_misplaced_module_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "lib2/geo.mcpl", "// header\npackage lib3;\nmodule geo;\n")
    main = write(tmp_path, "m.mcpl", "import lib2.geo;")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "mcpl-module-name"
    assert "declares module lib3.geo, but is imported as lib2.geo" in d.message
    assert (d.span.line, d.span.column) == (2, 1)


def test_all_missing_imports_are_reported_together(tmp_path: Path) -> None:
    main = write(tmp_path, "m.mcpl", "import a.b;\nimport c.d;\nperfect void f() { }")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    assert [d.span.line for d in exc.value.diagnostics] == [1, 2]


def test_syntax_error_in_an_imported_module(tmp_path: Path) -> None:
    write(tmp_path, "q/broken.mcpl", "package q; module broken;\nperfect void f( { }")
    main = write(tmp_path, "m.mcpl", "import q.broken;")
    with pytest.raises(MclError) as exc:
        load_program(main, library=LIB)
    (d,) = exc.value.diagnostics
    assert d.code == "mcpl-syntax" and d.span.file == str(tmp_path / "q" / "broken.mcpl")


def test_default_library_names_come_from_the_bundled_descriptions(tmp_path: Path) -> None:
    main = write(tmp_path, "m.mcpl", "import fermi;\nimport perfect;\nperfect void f() { }")
    prog = load_program(main)
    assert prog.hwd_imports["m"] == ("fermi", "perfect")


def test_every_shipped_kernel_loads() -> None:
    paths = sorted(kernels_dir().glob("*/*.mcpl"))
    assert paths
    for path in paths:
        prog = load_program(path)
        assert prog.main.functions, path
