"""`mcl tune`: search a kernel's named constants for the fastest correct configuration
(Kernel Tuner does the search; with `--strategy model` in the order of mcl's time model,
mcl.tune.model), and the `.tuned.toml` files that keep the result beside
the kernel for `mcl run`, `mcl codegen` and `mcl report --run` (docs/tuning.md)."""

from mcl.tune.tuned_file import TunedConfig, best_tuned, read_tuned, tuned_path, write_tuned

__all__ = ["TunedConfig", "best_tuned", "read_tuned", "tuned_path", "write_tuned"]
