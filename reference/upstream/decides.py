"""The upstream line that decides each lesson in a loaded release, for the version matrix.

Each fix lesson's verdict turns on one method a fix changed, each residual lesson's on
the method that leaves its hole open (or closes it). We find that method by name in the
release (the one the adapter's class really runs, through its MRO; `attr.method` looks
on the class the adapter keeps in `attr`), look in its source for the shapes the lesson
is about, and report `file:line` and what that line does. The shapes are read from the
releases themselves; a release that matches none of them is reported at the method's
first line, as "changed: read it".
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

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
    "restart-recovery": (
        "KVReceiver",
        ("_connect",),
        [
            (r"get_monitor_socket\(", "watches its PUSH socket for a disconnect"),
            (r"\.connect\(endpoint\)", "connects the PUSH socket with no disconnect monitor"),
        ],
    ),
    "room-reuse": (
        "KVManager",
        ("update_status",),
        [
            (
                r"self\.request_status\[bootstrap_room\] = max\(",
                "any status for the room id lands on its current request",
            )
        ],
    ),
    "failure-records": (
        "KVReceiver",
        ("abort",),
        [
            (
                r"if self\.conclude_state != KVPoll\.Failed:",
                "records the reason unless the receiver concluded Failed (after Success it still does)",
            ),
            (r"self\.kv_mgr\.record_failure\(", "records the abort's reason, concluded or not"),
        ],
    ),
    "supervised-loops": (
        "DPDispatcher",
        ("_worker_watchdog",),
        [
            (
                r"while watch:\s*\n\s*done, _ = await asyncio\.wait\(",
                "the loop is in no try: an exception ends it",
            )
        ],
    ),
    "stale-tracker": (
        "KVManager",
        ("_mori_cleanup", "_tracking_receiver._clear", "_tracking_receiver.clear"),
        [
            (
                r"self\.addr_to_rooms_tracker\.pop\(bootstrap_addr",
                "discards from the set it fetched, pops whatever set the address has now, without the lock",
            ),
            (
                r"addr_to_rooms_tracker\[self\.bootstrap_addr\]\.discard\(",
                "discards from the address's current set, never pops it",
            ),
        ],
    ),
    "late-kv-write": (
        "KVReceiver",
        ("_check_waiting_timeout", "poll"),  # before 0.5.18 mooncake's poll had the timeout
        [
            (
                r"self\.kv_mgr\.update_status\(",
                "the waiting timeout fails the request its prefill still holds",
            ),
            (
                r"timed out after .*\n(.*\n)*?.*self\.conclude_state = KVPoll\.Failed",
                "the waiting timeout fails the request its prefill still holds",
            ),
        ],
    ),
    "bootstrap-partition": (
        "KVManager",
        ("_start_heartbeat_checker_thread", "start_decode_thread"),  # mooncake's closure before 0.5.13
        [(r"self\._handle_node_failure\(", "missed /health probes alone fail the prefill's rooms")],
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
        return getattr(module, "UNAVAILABLE", {}).get(component, "(component not driven)")
    found = [_decides(module, cls, method, shapes) for method in methods]
    return next(
        (line for line in found if line and "changed: read it" not in line),
        next(filter(None, found), "(none)"),
    )


def _decides(module: ModuleType, cls: type, method: str, shapes: list[tuple[str, str]]) -> str:
    function = _function(cls, method)
    if function is None:
        return ""
    code = function.__code__
    filename = code.co_filename
    rel = filename.partition(">/")[2]
    source = module.SOURCE.read(rel.removeprefix("sglang/")) or ""
    lines = source.splitlines(keepends=True)
    start = code.co_firstlineno - 1
    body = "".join(lines[start : start + _length(lines, start)])
    name = function.__qualname__
    for pattern, what in shapes:
        found = re.search(pattern, body)
        if found:
            line = code.co_firstlineno + body.count("\n", 0, found.start())
            return f"{rel}:{line} {name}: {what}"
    return f"{rel}:{code.co_firstlineno} {name}: changed: read it"


def _function(cls: type, method: str) -> Any:
    """Upstream's function `method` of `cls` (`attr.method`: of the class in `cls.attr`),
    through the MRO, unwrapped from staticmethod or classmethod; None if upstream has none."""
    attr, _, name = method.rpartition(".")
    owner_cls = getattr(cls, attr, None) if attr else cls
    for owner in getattr(owner_cls, "__mro__", ()):
        function = getattr(vars(owner).get(name), "__func__", vars(owner).get(name))
        if function is not None and function.__code__.co_filename.startswith("<"):
            return function
    return None


def _length(lines: list[str], start: int) -> int:
    """How many lines the `def` at `start` spans (up to the next line indented as little),
    its decorators included."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    decorated = True
    for offset, line in enumerate(lines[start + 1 :], 1):
        decorated = decorated and lines[start + offset - 1].lstrip().startswith("@")
        if decorated:
            continue
        if line.strip() and len(line) - len(line.lstrip()) <= indent and not line.lstrip().startswith(")"):
            return offset
    return len(lines) - start
