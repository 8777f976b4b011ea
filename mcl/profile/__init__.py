"""`mcl profile`: the feedback held against the counters of Nsight Compute (docs/profile.md)."""
