"""mcl — Many-Core Levels: stepwise refinement for performance.

The package follows docs/architecture.md: `mcl.hdl` reads hardware descriptions,
`mcl.mcpl` is the kernel-language front end, `mcl.translate` moves kernels between levels
(the paper's Appendix A), `mcl.feedback` analyses them, `mcl.codegen` emits OpenCL/C++.
"""

__version__ = "0.1.0"
