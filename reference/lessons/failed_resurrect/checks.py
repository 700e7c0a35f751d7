"""The checklist of lesson `failed-resurrect`: what PR #24539 guarantees, one check each.

The fix is two lines in `update_status`: a Failed for a room that is absent (cleared) is
a no-op. Read with the PR's text, it promises more than the story shows:

- a late Failed never re-creates a cleared room, whatever state the room was cleared
  in and whichever thread delivers the Failed (aborts, timeouts, status threads);
- a room id a new request reuses is not Failed from a stale write that landed before
  it opened (users can supply their own `bootstrap_room`);
- `request_status` stays bounded however many late aborts arrive;
- and it changes nothing else a request relies on: a Failed for an open room (a fresh
  or a reused id) is still stored, and a new request's first write opens an absent room.

Every check drives only the variant protocol (`update_status`, `check_status`, `clear`,
`record_failure`, `request_status`) on the mock transport; none reads how a fix works.
"""

from __future__ import annotations

import threading
from types import ModuleType

from reference.harness.capture import thread_errors
from reference.harness.checks import Check
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

PR = "https://github.com/sgl-project/sglang/pull/24539"
# Where a room's life can stand when its request is cleared, and the writes that get it there.
PATHS: dict[str, tuple[KVPoll, ...]] = {
    "Bootstrapping": (KVPoll.Bootstrapping,),
    "WaitingForInput": (KVPoll.Bootstrapping, KVPoll.WaitingForInput),
    "Transferring": (KVPoll.Bootstrapping, KVPoll.WaitingForInput, KVPoll.Transferring),
    "Success": (KVPoll.Bootstrapping, KVPoll.WaitingForInput, KVPoll.Transferring, KVPoll.Success),
    "Failed": (KVPoll.Bootstrapping, KVPoll.WaitingForInput, KVPoll.Failed),
}
OPEN_STATES = ("Bootstrapping", "WaitingForInput", "Transferring")  # a request still in flight
ROOMS, THREADS = 40, 4
CYCLES, WINDOW = 300, 4  # open/clear/late-abort cycles, rooms open at once
BOUND = 5.0  # real seconds a delivering thread may take


def _manager(variant: ModuleType):
    return variant.KVManager(MockNetwork())


def _open(manager, room: int, state: str) -> None:
    for status in PATHS[state]:
        manager.update_status(room, status)


def _late_failed(manager, room: int) -> None:
    """What a late `abort()` does since PR #24522: record the failure, write Failed (a
    manager with its own `late_abort`, upstream's, runs its receiver's `abort()`)."""
    own = getattr(manager, "late_abort", None)
    if own is not None:
        return own(room)
    manager.record_failure(room, "Aborted by AbortReq.")
    manager.update_status(room, KVPoll.Failed)


def _deliver(manager, rooms: list[int]) -> None:
    for room in rooms:
        _late_failed(manager, room)


def _name(status) -> str:
    return "absent" if status is None else KVPoll(int(status)).name


def late_failed_never_recreates(variant: ModuleType, _options: Options) -> Observation:
    manager, states = _manager(variant), list(PATHS)
    rooms = {1000 + i: states[i % len(states)] for i in range(ROOMS)}
    for room, state in rooms.items():
        _open(manager, room, state)
        manager.clear(room)
    shares = [list(rooms)[i::THREADS] for i in range(THREADS)]
    with thread_errors() as errors:
        threads = [
            threading.Thread(target=_deliver, args=(manager, share), name=f"late-abort-{i}")
            for i, share in enumerate(shares)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(BOUND)
    if any(thread.is_alive() for thread in threads):
        return Observation(
            "unknown", f"a thread delivering late Failed writes did not finish within {BOUND:g} s"
        )
    if errors.errors:
        return Observation("bug", f"a late Failed for a cleared room raised: {errors.describe()}")
    back = {room: rooms[room] for room in rooms if room in manager.request_status}
    if back:
        by_state = sorted({state for state in back.values()})
        return Observation(
            "bug",
            f"{len(back)} of {ROOMS} cleared rooms came back after a late Failed from {THREADS} other "
            f"threads (cleared at {', '.join(by_state)}); request_status holds {len(manager.request_status)}",
            details={"recreated": len(back)},
        )
    return Observation(
        "ok", f"all {ROOMS} cleared rooms (cleared at each of {len(PATHS)} states) stayed cleared"
    )


def reused_room_starts_clean(variant: ModuleType, _options: Options) -> Observation:
    manager, problems = _manager(variant), []
    for room, state in enumerate(PATHS, start=1):
        _open(manager, room, state)
        manager.clear(room)
        _late_failed(manager, room)  # the stale write lands before the new request opens the id
        for status in PATHS["Success"]:
            manager.update_status(room, status)
            got = manager.request_status.get(room)
            if got is None or int(got) != status:
                problems.append(
                    f"room {room} (first cleared at {state}) reused: wrote {status.name}, reads {_name(got)}"
                )
                break
        manager.clear(room)
    if problems:
        return Observation(
            "bug", f"a stale Failed landed before the room id was reused: {'; '.join(problems)}"
        )
    return Observation(
        "ok", f"{len(PATHS)} reused room ids each went Bootstrapping to Success after a stale Failed"
    )


def open_room_takes_failed(variant: ModuleType, _options: Options) -> Observation:
    manager, problems = _manager(variant), []
    for room, state in enumerate(OPEN_STATES, start=1):
        _open(manager, room, state)  # a fresh request in flight
        manager.update_status(room, KVPoll.Failed)
        reused = room + 100  # an id a previous request used, cleared, late-aborted, now open again
        _open(manager, reused, "Success")
        manager.clear(reused)
        _late_failed(manager, reused)
        _open(manager, reused, state)
        _late_failed(manager, reused)
        for which, r in (("fresh", room), ("reused", reused)):
            got = manager.request_status.get(r)
            if got is None or int(got) != KVPoll.Failed:
                problems.append(f"{which} room {r} open at {state} took Failed and reads {_name(got)}")
    if problems:
        return Observation("bug", f"a Failed for an open room was lost: {'; '.join(problems)}")
    return Observation(
        "ok", f"a Failed for an open room is stored ({len(OPEN_STATES)} states, fresh and reused ids)"
    )


def request_status_bounded(variant: ModuleType, _options: Options) -> Observation:
    manager, largest, open_rooms = _manager(variant), 0, []
    for cycle in range(CYCLES):
        room = 5000 + cycle
        _open(manager, room, "WaitingForInput")
        open_rooms.append(room)
        if len(open_rooms) > WINDOW:  # the oldest request ends; its abort arrives late
            done = open_rooms.pop(0)
            manager.update_status(done, KVPoll.Success)
            manager.clear(done)
            _late_failed(manager, done)
        largest = max(largest, len(manager.request_status))
    for room in open_rooms:
        manager.clear(room)
        _late_failed(manager, room)
    final = len(manager.request_status)
    details = {"largest": largest, "final": final}
    if largest > WINDOW or final:
        return Observation(
            "bug",
            f"request_status grew to {largest} entries over {CYCLES} open/clear/late-abort cycles "
            f"with at most {WINDOW} rooms open, and keeps {final} after every room was cleared",
            details=details,
        )
    return Observation(
        "ok",
        f"request_status stayed within {largest} entries over {CYCLES} cycles, 0 at the end",
        details=details,
    )


def absent_room_opens(variant: ModuleType, _options: Options) -> Observation:
    manager, problems = _manager(variant), []
    reused = 77
    _open(manager, reused, "Success")
    manager.clear(reused)
    for which, room in (("a never-seen", 7), ("a cleared", reused)):
        for status in PATHS["Success"]:  # the new request's first write opens the room
            manager.update_status(room, status)
            got = manager.request_status.get(room)
            if got is None or int(got) != status:
                problems.append(f"{status.name} written to {which} room {room} reads {_name(got)}")
                break
    if problems:
        return Observation("bug", f"a new request could not open an absent room: {'; '.join(problems)}")
    return Observation("ok", "a first write of Bootstrapping opens an absent room, never-seen or cleared")


CHECKS = (
    Check(
        "late-failed-never-recreates",
        "a late Failed after clear(), from any thread, never re-creates the room, whatever its state was",
        f"update_status: an absent room plus Failed returns without storing ({PR})",
        late_failed_never_recreates,
    ),
    Check(
        "reused-room-starts-clean",
        "a new request reusing a cleared room id is not Failed by a stale write that landed before it opened",
        f'PR text: "a later request that reuses the room id may be marked Failed" ({PR})',
        reused_room_starts_clean,
    ),
    Check(
        "open-room-takes-failed",
        "a Failed for an open room, fresh or a reused id, is still stored",
        f"update_status: the present-room branch is unchanged, Failed overrides ({PR})",
        open_room_takes_failed,
    ),
    Check(
        "request-status-bounded",
        "request_status stays bounded by the rooms open over many open/clear/late-abort cycles",
        f'PR text: "request_status grows with every late abort" (the leak it closes) ({PR})',
        request_status_bounded,
    ),
    Check(
        "absent-room-opens",
        "a new request's first write (Bootstrapping) opens an absent room, never-seen or cleared",
        f"update_status: only `status == Failed` returns early for an absent room ({PR})",
        absent_room_opens,
    ),
)
