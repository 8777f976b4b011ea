"""`mcl lsp`: a Language Server Protocol server for MCPL kernels and HDL descriptions.

The original MCL system delivered errors and performance feedback as markers in an Eclipse
plugin (section 6 of the paper); this is its modern form, one server for every editor that
speaks LSP (docs/editor.md). It reuses mcl's own passes and adds no analysis of its own:

- `config`: the client's `mcl.*` settings merged with the project's mcl.toml;
- `analysis`: `mcl check` and `mcl hwd show` diagnostics for an editor buffer;
- `worker`: performance feedback in a separate process, cancelled by newer edits;
- `convert`: mcl diagnostics and feedback messages as LSP diagnostics;
- `lookup`: what stands at a position of a kernel (names, accesses, foreach, calls);
- `hover`, `navigation` (definition, symbols), `completion`, `actions`: the features;
- `server`: the pygls server that ties them together.

pygls and lsprotocol are an optional extra (`pip install mcl[lsp]`); nothing else in mcl
imports this package.
"""
