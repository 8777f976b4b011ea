"""Refinements: named, parameterised rewrites of a checked kernel at its level, each
with its preconditions, its parameters and the findings it answers, that produce the
next MCPL version as readable source (the file's text edited by spans), verified before
they are offered (docs/refinements.md).

One module per refinement: `set_constant`, `hoist_load`, `pad_shared`, `unroll`,
`stage_tile`, `swap_mapping`, `row_per_warp`, `interchange`, `vector_loads` (`nesting`
holds what the two swaps share), `vector_groups`, `several_elements`, `tile_2d`,
`tile_2d_shared`, `cpu_blocks`, `privatise`. The API that `mcl apply` (and an editor's
code actions, a search over refinements) calls is `mcl.refine.offers`:
`open_kernel`, `list_offers`, `proposal_for`, `make_offer`."""
