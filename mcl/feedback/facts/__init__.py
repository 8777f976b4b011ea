"""Facts: what the analyses know about one function, derived once and shared.

`kernel` gathers the function's loops, statements and accesses in one walk of the AST
(the paper's section 6: the analyses "work on the abstract syntax tree"); `symbolic`,
`counting` and `sums` give their SymPy values and exact counts; `strides`, `layout`,
`sizes`, `blocks`, `resident` and `guard_values` answer narrower questions on top of them.
What several analyses need is a fact here, not an import of the analysis that reports it:
the reuse findings (`reuse.ReuseFacts`), the operation counts (`costs.OperationCosts`),
store contention (`contention`), the description's caches, lock-step group and faster
spaces (`hardware`) and whether an index can be followed (`predictable`). A derived fact
(`kernel.Derived`) is derived once per function by `ctx.get(Kind)`.

A fact module imports other facts and the engine's data types, never an analysis
(docs/architecture.md, "Feedback in layers").
"""
