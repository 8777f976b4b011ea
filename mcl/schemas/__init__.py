"""JSON schemas of the documents `mcl ... --format json` writes, shipped with the package.

Every document carries `schema_version` (an integer, raised when a field changes meaning
or disappears; adding a field keeps it). `load_schema("hwd-list")` returns the schema of
`mcl hwd list --format json`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1


def load_schema(name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)
