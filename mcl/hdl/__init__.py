"""mcl.hdl — hardware descriptions: grammar (hdl.tx), parsing (syntax), reference
resolution (resolve), the typed model and its query API (model), validation (build,
equivalence), the hierarchy of descriptions (hierarchy) and the library (library).

Most callers need only `default_library()` / `load_library()` and the query methods of
`HardwareDescription` (docs/hdl-api.md).
"""
