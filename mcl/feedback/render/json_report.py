"""Feedback as JSON for editors and scripts: `{"messages": [...]}`, documented by the JSON
Schema in docs/feedback-schema.json (and docs/feedback.md)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from mcl.feedback.messages import Message, Value
from mcl.render import span_to_json


def value_to_json(v: Value) -> dict[str, Any]:
    numeric = v.numeric
    if isinstance(numeric, float) and not math.isfinite(numeric):
        numeric = None  # JSON has no infinity; "unlimited" stays in the symbolic text
    return {"symbolic": v.text, "numeric": numeric}


def message_to_json(m: Message) -> dict[str, Any]:
    return {
        **span_to_json(m.span),
        "severity": m.severity.value,
        "analysis": m.analysis,
        "code": m.code,
        "message": m.text,
        "values": {name: value_to_json(v) for name, v in m.values},
        "function": m.function,
        "loops": list(m.loops),
        "approximate": m.approximate,
        "needs": list(m.needs),
        "hint": m.hint,
    }


def messages_document(messages: Iterable[Message]) -> dict[str, Any]:
    return {"messages": [message_to_json(m) for m in messages]}


def messages_json(messages: Iterable[Message]) -> str:
    return json.dumps(messages_document(messages), indent=2)
