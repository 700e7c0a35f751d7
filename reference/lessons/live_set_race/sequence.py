"""The interleaving lesson `live-set-race` forces, as data for a sequence diagram
(buggy when `fixed` is False); `reference.teaching.plots.sequence_picture` draws it."""

from __future__ import annotations

from reference.teaching.sequences import Sequence, Step

_LIVE_SET_ACTORS = ("heartbeat thread", "connection_lock", "tracker[addr] set", "mori status thread")


def interleaving(fixed: bool) -> Sequence:
    H, L, T, M = _LIVE_SET_ACTORS
    take = (
        Step(H, T, "affected = list(tracker.get(addr))  # a snapshot", "fix")
        if fixed
        else Step(H, T, "affected = tracker.get(addr)  # the same live set", "bug")
    )
    after = (
        (
            Step(H, H, "next(affected): a list, unchanged -> rooms 2, 3 failed", "fix"),
            Step(H, H, "heartbeat keeps probing: a later failure is detected", "note"),
        )
        if fixed
        else (
            Step(H, T, "next(affected): RuntimeError: Set changed size during iteration", "error"),
            Step(H, H, "thread dies: rooms 2, 3 never failed, no later failure detected", "error"),
        )
    )
    return Sequence(
        f"live-set-race, {'fixed' if fixed else 'buggy'} form",
        _LIVE_SET_ACTORS,
        (
            Step(M, T, "room 4 done: rooms = tracker.get(addr)  # keeps a reference"),
            Step(H, H, "2 failed /health probes: _handle_node_failure(addr)"),
            Step(H, L, "acquire"),
            take,
            Step(H, T, "tracker.pop(addr)"),
            Step(H, L, "release"),
            Step(H, H, "for room in affected: room 1 -> Failed"),
            Step(M, T, "rooms.discard(4)  # no lock"),
            *after,
        ),
    )
