"""`#line` directives come from the spans of the statements the emitter prints (the
dialect's `line_directive`: CUDA's `#line N "file"`, none for OpenCL), not from the
text's comments: every line that points back to the MCPL has its directive right
before it, struct types and views included, whatever the file is called."""

from __future__ import annotations

import re
from pathlib import Path

from mcl import pipeline
from mcl.backends.cuda.dialect import CUDA
from mcl.backends.opencl.dialect import OPENCL
from mcl.diagnostics import Span

from .support import library, load

SOURCE = """\
module k;
type pair { float x; float y; }

perfect void f(int n, float[n] a, pair[n] p) {
  a as float[n / 2][2] halves;
  foreach (int i in n threads) {
    a[i] = p[i].x + p[i].y;
  }
}
"""


def _pointing_back(source: str, name: str) -> list[tuple[int, str]]:
    """(line number, MCPL line) of the generated lines that end in `// NAME:LINE`
    (statements, declarations, views), except preprocessor lines and comments."""
    return [(k, found.group(1)) for k, text in enumerate(source.split("\n"))
            if (found := re.search(rf"// {re.escape(name)}:(\d+)\b", text))
            and not text.lstrip().startswith(("#", "//"))]


def test_every_line_that_points_back_has_its_directive_and_no_other(tmp_path: Path) -> None:
    checked = load(tmp_path, SOURCE, "my kernel.mcpl")  # a name with a space
    source = pipeline.generate(checked, "hopper", library(), language="cuda").source
    lines = source.split("\n")
    marked = _pointing_back(source, "my kernel.mcpl")
    assert marked and any(lines[k].startswith("typedef struct") for k, _ in marked)
    assert any("(view of a)" in lines[k] for k, _ in marked)
    for k, line in marked:
        assert lines[k - 1] == f'#line {line} "my kernel.mcpl"'
    directives = [k for k, text in enumerate(lines) if text.startswith("#line ")]
    assert [k + 1 for k in directives] == [k for k, _ in marked]


def test_opencl_has_no_directives_for_as_many_lines_pointing_back(tmp_path: Path) -> None:
    checked = load(tmp_path, SOURCE)
    cuda = pipeline.generate(checked, "hopper", library(), language="cuda").source
    opencl = pipeline.generate(checked, "hopper", library()).source
    assert "#line" not in opencl
    assert len(_pointing_back(opencl, "kernel.mcpl")) == cuda.count("\n#line ")


def test_the_dialects_hook() -> None:
    span = Span.point("/some/where/k.mcpl", 12, 3)
    assert CUDA.line_directive(span) == '#line 12 "k.mcpl"'
    assert CUDA.line_directive(Span.point('a"b.mcpl', 1, 1)) == '#line 1 "a\\"b.mcpl"'
    assert OPENCL.line_directive(span) is None
