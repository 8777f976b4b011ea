"""The error-tolerant scan of a kernel that has never parsed (mcl.lsp.scan): the names
declared before the cursor, not the words of expressions, comments or other functions."""

from __future__ import annotations

from mcl.lsp.scan import level_at, scan

TYPED = """\
import gpu;
// const int COMMENTED = 1;
const int TILE = 16;
type Pair { float a; float b; }

gpu void first(int n, dev float[n] x) {
  int early = 1;
}

gpu void second(int m, dev float[m, TILE] y, Pair q) {
  int rows = (m + TILE - 1) / TILE;
  foreach (int b in rows blocks) {
    Pair local_pair;
    y[b, 0] = q.a + toFloat(rows);
    float later = """


def test_the_names_before_the_cursor_in_its_function() -> None:
    found = {(s.name, s.kind) for s in scan(TYPED, len(TYPED))}
    assert found == {("TILE", "constant"), ("Pair", "type"), ("first", "function"),
                     ("second", "function"), ("m", "parameter"), ("y", "parameter"),
                     ("q", "parameter"), ("rows", "variable"), ("b", "foreach index"),
                     ("local_pair", "variable"), ("later", "variable")}
    assert level_at(TYPED, len(TYPED)) == "gpu"


def test_nothing_of_the_function_after_the_cursor() -> None:
    cursor = TYPED.index("int early") + 4
    names = {s.name for s in scan(TYPED, cursor)}
    assert {"n", "x"} <= names and "early" not in names and "rows" not in names
