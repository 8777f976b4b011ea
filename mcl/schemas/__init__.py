"""JSON schemas of the documents `mcl ... --format json` writes, shipped with the package.

Every document carries `schema_version` (an integer, raised when a field changes meaning
or disappears; adding a field keeps it). `load_schema("hwd-list")` returns the schema of
`mcl hwd list --format json`, with every reference to another schema of the package
(`{"$ref": "diagnostic.schema.json"}`) replaced by that schema, so a validator needs no
registry.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1


def load_schema(name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text("utf-8")
    return _inline(json.loads(text))


def _inline(node: Any) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.endswith(".schema.json"):
            inner = load_schema(ref.removesuffix(".schema.json"))
            inner.pop("$schema", None)
            return inner
        return {key: _inline(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(value) for value in node]
    return node
