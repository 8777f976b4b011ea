"""`mcl hwd detect`: describe the machine at hand as a hardware description.

Three stages, kept apart so that a recorded query replaces the hardware in tests:
query (query.py: OpenCL, CUDA and the host's /proc and /sys, into one JSON-able dict),
measurement (measure.py: short OpenCL benchmarks, only with --measure) and generation
(facts.py reads a query into figures with their sources; generate.py writes the `.hdl`
and its `.opencl.toml`). docs/hdl.md, "Bring your own machine", is the user's view.
"""
