"""Bundled kernels: one folder per application with MCPL versions and a numpy reference."""
