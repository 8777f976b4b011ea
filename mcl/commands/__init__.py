"""Sub-commands of `mcl`; each module defines `register(subparsers)` setting `func`."""
