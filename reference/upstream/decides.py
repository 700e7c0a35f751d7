"""The upstream line that decides each lesson in a loaded release, for the version matrix.

Each lesson's verdict turns on one method a fix changed. We find that method by name in
the release (the one the adapter's class really runs, through its MRO), look in its
source for the shapes the fix is about, and report `file:line` and what that line does.
The shapes are read from the releases themselves; a release that matches none of them
is reported at the method's first line, as "changed: read it".
"""

from __future__ import annotations

import re
from types import ModuleType

# lesson -> (adapter class, methods to try in order, [(regex within it, what that line does)]).
SHAPES: dict[str, tuple[str, tuple[str, ...], list[tuple[str, str]]]] = {
    "failed-resurrect": (
        "KVManager",
        ("update_status",),
        [
            (r"status in \(KVPoll\.Bootstrapping", "only an opening status creates a room"),
            (r"if status == KVPoll\.Failed:\s*\n\s*return", "a Failed write for an absent room returns"),
            (r"self\.request_status\[bootstrap_room\] = status", "stores any status for an absent room"),
        ],
    ),
    "live-set-race": (
        "KVManager",
        ("_handle_node_failure",),
        [
            (r"possible_affected_rooms = list\(", "snapshots the rooms under connection_lock"),
            (r"possible_affected_rooms = self\.addr_to_rooms_tracker\.get\(", "takes the live room set"),
        ],
    ),
    "stale-bootstrap": (
        "KVReceiver",
        ("_check_waiting_timeout", "poll"),  # before 0.5.18 mooncake's poll had the timeout
        [
            (r"self\.invalidate_cached_bootstrap_infos\(\)", "the waiting timeout drops the cached entry"),
            (r"self\.kv_mgr\.update_status\(", "the waiting timeout fails the request, keeps the entry"),
            (
                r"timed out after .*\n(.*\n)*?.*self\.conclude_state = KVPoll\.Failed",
                "the waiting timeout fails it, keeps the entry",
            ),
        ],
    ),
    "task-refs": (
        "BootstrapServer",
        ("_run_server",),
        [
            (r"\w+ = self\._loop\.create_task\(self\._cleanup_expired_entries", "the cleanup task is held"),
            (r"self\._loop\.create_task\(self\._cleanup_expired_entries", "bare create_task for the cleanup"),
        ],
    ),
}


def deciding_line(module: ModuleType, lesson_id: str) -> str:
    """`file:line what` for a loaded upstream variant module, or why there is none."""
    component, methods, shapes = SHAPES[lesson_id]
    cls = getattr(module, component, None)
    if cls is None:
        return "(component not driven)"
    found = [_decides(module, cls, method, shapes) for method in methods]
    return next((line for line in found if line and "changed: read it" not in line), found[0] or "(none)")


def _decides(module: ModuleType, cls: type, method: str, shapes: list[tuple[str, str]]) -> str:
    owner = next((c for c in cls.__mro__ if method in vars(c) and _upstream(c, method)), None)
    if owner is None:
        return ""
    code = vars(owner)[method].__code__
    filename = code.co_filename
    rel = filename.partition(">/")[2]
    source = module.SOURCE.read(rel.removeprefix("sglang/")) or ""
    lines = source.splitlines(keepends=True)
    start = code.co_firstlineno - 1
    body = "".join(lines[start : start + _length(lines, start)])
    for pattern, what in shapes:
        found = re.search(pattern, body)
        if found:
            line = code.co_firstlineno + body.count("\n", 0, found.start())
            return f"{rel}:{line} {owner.__name__}.{method}: {what}"
    return f"{rel}:{code.co_firstlineno} {owner.__name__}.{method}: changed: read it"


def _upstream(cls: type, method: str) -> bool:
    return vars(cls)[method].__code__.co_filename.startswith("<")


def _length(lines: list[str], start: int) -> int:
    """How many lines the `def` at `start` spans (up to the next line indented as little)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    for offset, line in enumerate(lines[start + 1 :], 1):
        if line.strip() and len(line) - len(line.lstrip()) <= indent and not line.lstrip().startswith(")"):
            return offset
    return len(lines) - start
