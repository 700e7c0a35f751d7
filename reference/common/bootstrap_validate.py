"""Input checks for the bootstrap server's routes: one-line `BadRequest` messages.

Upstream's handlers index the JSON body and call `int()` on query strings directly, so
a missing field or a malformed body ends in an aiohttp 500, and whatever parses is
stored. Here every check happens before any state changes, and a failure is a 400
whose text names the field. The rules (listed in `reference/common/README.md`):
bodies are JSON objects in UTF-8 without BOM (no NaN/Infinity); integers are JSON
integers in range (ports 1..65535); strings are short, printable ASCII; `rank_ip`
parses as an IP address; query integers are ASCII digits.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Any

MAX_RANK = 1 << 16  # sizes and ranks above this are not a real deployment
MAX_ROOM = (1 << 63) - 1  # upstream rooms are random 63-bit integers
MAX_PORT = 65535
_QUERY_INT = re.compile(r"-?[0-9]{1,6}")  # ASCII digits only: "%D9%A0" is not 0
_PRINTABLE_ASCII = re.compile(r"[!-~]+")  # visible ASCII, no spaces or control characters


class BadRequest(ValueError):
    """A request the server rejects with 400; the message is one line for the client."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_object(body: bytes) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes (no BOM; json.loads alone would take UTF-16/32 too)."""
    if body.startswith(b"\xef\xbb\xbf"):
        raise BadRequest("malformed JSON body: UTF-8 only, without a byte order mark")
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"malformed JSON body: not UTF-8 (byte {exc.start})") from None
    except RecursionError:
        raise BadRequest("malformed JSON body: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, an integer over 4300 digits
        raise BadRequest(f"malformed JSON body: {str(exc).splitlines()[0][:120]}") from None
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


def text(obj: Mapping[str, Any], name: str, max_len: int = 64) -> str:
    if name not in obj:
        raise BadRequest(f"missing field {name!r}")
    value = obj[name]
    if not isinstance(value, str) or len(value) > max_len or not _PRINTABLE_ASCII.fullmatch(value):
        raise BadRequest(
            f"field {name!r} must be a non-empty string of at most {max_len} printable ASCII "
            "characters without spaces"
        )
    return value


def ip_address(obj: Mapping[str, Any], name: str) -> str:
    """An IPv4 or IPv6 address literal, kept as sent (upstream stores and echoes it)."""
    if name not in obj:
        raise BadRequest(f"missing field {name!r}")
    value = obj[name]
    if isinstance(value, str) and len(value) <= 64 and value.isprintable():
        try:
            ipaddress.ip_address(value)
            return value
        except ValueError:
            pass
    shown = repr(value)[:60] if isinstance(value, str) else type(value).__name__
    raise BadRequest(f"field {name!r} must be an IP address such as 10.0.0.1, got {shown}")


def optional_integer(obj: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    return None if obj.get(name) is None else integer(obj, name, low, high)


def optional_text(obj: Mapping[str, Any], name: str, max_len: int = 64) -> str | None:
    return None if obj.get(name) is None else text(obj, name, max_len)


def optional_bool(obj: Mapping[str, Any], name: str) -> bool:
    value = obj.get(name, False)
    if value is None or isinstance(value, bool):
        return bool(value)
    raise BadRequest(f"field {name!r} must be true, false or null, got {type(value).__name__}")


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
        if not _QUERY_INT.fullmatch(raw) or not -1 <= int(raw) <= MAX_RANK:
            raise BadRequest(
                f"query parameter {name!r} must be an integer, got {raw[:40]!a} "
                f"(ASCII digits, -1..{MAX_RANK})"
            )
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
