"""The refinement table of a kernel series — the paper's Table II (section 5).

A series is a folder of versions of one kernel (`kernels/matmul/`), listed in refinement
order by its `series.toml` (`mcl.report.series`). For every version the report shows its
level, what changed (the version's `// change:` header comment), the performance feedback
at its level (`mcl.feedback`, through `mcl.report.rows`) and, when asked, the performance
measured by running the OpenCL generated from a leaf (`mcl.report.measure`). Rendering to
the terminal or to Markdown is separate (`mcl.report.render`).

    load_series(folder) -> Series
    build_rows(series, library, values) -> list[Row]
    measure_program(program, function, leaf, library, args, device) -> Measurement
    prepare_session(program, function, leaf, library, device) -> (Session, problem)
    render_rich(title, rows, measurements, measured, console)
    render_markdown(title, rows, measurements, measured) -> str
"""

from mcl.report.measure import Measurement, measure_program, prepare_session
from mcl.report.rows import Row, build_rows
from mcl.report.series import Series, VersionSpec, change_of, load_series

__all__ = [
    "Measurement",
    "Row",
    "Series",
    "VersionSpec",
    "build_rows",
    "change_of",
    "load_series",
    "measure_program",
    "prepare_session",
]
