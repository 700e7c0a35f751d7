"""Input checks for the bootstrap server's routes: one-line `BadRequest` messages.

Upstream's handlers index the JSON body and call `int()` on query strings directly, so
a missing field or a malformed body ends in an aiohttp 500. Here every check happens
before any state changes, and a failure is a 400 whose text names the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

MAX_RANK = 1 << 16  # sizes and ranks above this are not a real deployment
MAX_ROOM = (1 << 63) - 1  # upstream rooms are random 63-bit integers
_QUERY_INT = re.compile(r"-?\d{1,19}")


class BadRequest(ValueError):
    """A request the server rejects with 400; the message is one line for the client."""


def json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"malformed JSON body: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"body must be a JSON object, got {type(value).__name__}")
    return value


def integer(obj: Mapping[str, Any], name: str, low: int, high: int) -> int:
    if name not in obj:
        raise BadRequest(f"missing field {name!r}")
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"field {name!r} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise BadRequest(f"field {name!r} = {value} outside {low}..{high}")
    return value


def text(obj: Mapping[str, Any], name: str, max_len: int = 255) -> str:
    if name not in obj:
        raise BadRequest(f"missing field {name!r}")
    value = obj[name]
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise BadRequest(f"field {name!r} must be a non-empty string of at most {max_len} characters")
    return value


def optional(obj: Mapping[str, Any], name: str, kind: type, default: Any = None) -> Any:
    value = obj.get(name, default)
    if value is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
        return value
    raise BadRequest(f"field {name!r} must be {kind.__name__} or null, got {type(value).__name__}")


def rank_below(obj: Mapping[str, Any], rank: str, size: str) -> tuple[int, int]:
    """A `(size, rank)` pair with 1 <= size and 0 <= rank < size."""
    size_value = integer(obj, size, 1, MAX_RANK)
    return size_value, integer(obj, rank, 0, size_value - 1)


def query_ints(query: Mapping[str, str], names: tuple[str, ...]) -> dict[str, int]:
    missing = [name for name in names if name not in query]
    if missing:
        raise BadRequest(f"missing query parameter(s): {', '.join(missing)}")
    values = {}
    for name in names:
        raw = query[name]
        if not _QUERY_INT.fullmatch(raw):
            raise BadRequest(f"query parameter {name!r} must be an integer, got {raw[:40]!r}")
        values[name] = int(raw)
    return values


def room_list(obj: Mapping[str, Any], name: str, max_len: int = 4096) -> list[int]:
    value = obj.get(name)
    if not isinstance(value, list) or len(value) > max_len:
        raise BadRequest(f"field {name!r} must be a list of at most {max_len} room ids")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= MAX_ROOM:
            raise BadRequest(f"field {name!r} must hold room ids (integers 0..2^63-1), got {item!r}")
    return value
