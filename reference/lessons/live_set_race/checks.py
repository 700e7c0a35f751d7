"""The checklist of lesson `live-set-race`: what PR #36351 guarantees, one check each.

The fix takes a snapshot of the failed prefill's room set inside `connection_lock` and
iterates that. The PR's text says what that is for: the heartbeat must not die of
`Set changed size during iteration` while a backend cleans up rooms without the lock,
every room waiting on the dead prefill must be failed, and later failures must still be
detected. Each check places mori-style cleanups anywhere in the failure handler's loop
(`race.py`) and judges only what any correct fix shows: room statuses, the tracker,
exceptions in threads (one check asks all three: `no-exception-in-any-thread` was its
second discard). That the heartbeat lives on and fails a later dead prefill's
rooms, and that another prefill's rooms are left alone until it dies, are the story's
and the simulation's (`threads-alive`, `node-failure-fails-rooms`), not repeated here; so
are what a missed probe is and how many in a row declare a prefill dead
(`dead-only-after-misses-in-a-row`, over scripted 503 and late `/health` answers), and that
the heartbeat's thread is a daemon (`threads-daemon`).
"""

from __future__ import annotations

from types import ModuleType

from reference.clock import VirtualClock
from reference.harness.capture import thread_errors
from reference.harness.checks import Check
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.live_set_race.race import Race, build, fail_on_thread, not_failed, status_of
from reference.transport.mock import MockNetwork

PR = "https://github.com/sgl-project/sglang/pull/36351"
A, B, C = "10.0.1.1:8998", "10.0.1.2:8998", "10.0.1.3:8998"
POSITIONS = range(1, 8)  # after which of the handler's rooms the discard lands
NEEDS = ("KVManager", "KVManager._handle_node_failure", "KVManager._cleanup_room_tracking")


def _unplaced() -> Observation:
    return Observation(
        "unknown", "the handler never fired node_failure.after_room: no discard could be placed"
    )


def every_affected_room_failed(variant: ModuleType, _options: Options) -> Observation:
    """Two prefills die; status threads discard rooms of theirs at each position of the
    handler's loop (two on the first prefill, after rooms `at` and `at + 1`): every room
    waiting on either is Failed, no succeeded room flips, and no thread raises."""
    problems, placed, hung, died_at, died = [], 0, [], [], set()
    for at in POSITIONS:
        with thread_errors() as errors:
            hooks, manager, (a, b, _c) = build(
                variant, MockNetwork(), {A: (5, 1, 1), B: (3, 1, 0), C: (2, 0, 0)}
            )
            race = Race(hooks)
            try:
                race.park(manager, a.succeeded[0], A, at)  # one Success and one Failed room of A
                race.park(manager, a.failed[0], A, at + 1)  # cleaned up in turn
                race.park(manager, b.succeeded[0], B, min(at, 4))
                handlers = [fail_on_thread(manager, A), fail_on_thread(manager, B)]
            finally:
                race.finish()
        placed += race.placed()
        hung += [at] if any(handler.is_alive() for handler in handlers) else []
        lost = not_failed(manager, a) + not_failed(manager, b)
        flipped = [r for r in a.succeeded + b.succeeded if status_of(manager, r) != "Success"]
        if lost:
            problems.append(f"after room {at}: {len(lost)} of 8 left un-failed")
        if flipped:
            problems.append(f"after room {at}: succeeded rooms {flipped} no longer Success")
        died_at += [at] if errors.errors else []
        died |= {f"{name}: {type(e).__name__}: {e}" for name, e in errors.errors}
    if died_at:
        problems.append(
            f"a thread died with discards after rooms k, k + 1 for k in {died_at} ({'; '.join(sorted(died))})"
        )
    if problems:
        return Observation("bug", f"by where the discards landed: {'; '.join(problems)}")
    if hung:
        return Observation("unknown", f"the failure handler did not return (discards after rooms {hung})")
    if not placed:
        return _unplaced()
    return Observation(
        "ok",
        f"every affected room of 2 dead prefills failed and no thread raised, with discards at each of "
        f"{len(POSITIONS)} positions",
    )


def failed_prefill_forgotten(variant: ModuleType, _options: Options) -> Observation:
    """Once a prefill is declared dead, the decode keeps nothing of it: not its info (the
    heartbeat would go on probing it), not the bootstrap entries a receiver cached for it
    (a new request would send to its dead ports), not its room set; every open room it
    held is Failed with a failure record naming the lost prefill. Another prefill's
    cached entry stays."""
    with thread_errors():
        _hooks, manager, (a, _c) = build(variant, MockNetwork(), {A: (4, 1, 0), C: (2, 0, 0)})
        for addr, port in ((A, 41000), (C, 42000)):  # what a receiver caches after its route fetch
            manager.connection_pool[f"{addr}_0_0"] = [{"rank_ip": addr.split(":")[0], "rank_port": port}]
        fail_on_thread(manager, A)
    problems = [f"{what} still holds the dead prefill" for what, kept in (
        ("prefill_info_table", A in manager.prefill_info_table),
        ("connection_pool", any(key.startswith(A) for key in manager.connection_pool)),
        ("addr_to_rooms_tracker", A in manager.addr_to_rooms_tracker),
    ) if kept]  # fmt: skip
    if f"{C}_0_0" not in manager.connection_pool:
        problems.append("the live prefill's cached entry was dropped")
    records = getattr(manager, "failure_records", {})
    unrecorded = [r for r in a.in_flight if A not in str(records.get(r, ""))]
    if unrecorded:
        problems.append(f"rooms {unrecorded} failed with no failure record naming {A}")
    lost = not_failed(manager, a)
    if lost:
        problems.append(f"rooms {lost} not failed")
    if problems:
        return Observation("bug", f"after {A} was declared dead: {'; '.join(problems)}")
    return Observation(
        "ok",
        f"the dead prefill's info, cached entries and room set dropped; its {len(a.in_flight)} open "
        "rooms failed, each with a record naming it; the live prefill's entry kept",
    )


def probe_prunes_cleared_rooms(variant: ModuleType, _options: Options) -> Observation:
    """A successful probe prunes the rooms cleared since from its prefill's room set: a
    backend with no cleanup thread of its own (mooncake) has only that to empty it."""
    clock, net = VirtualClock(), MockNetwork()
    net.add_prefill(A)
    with thread_errors() as errors:
        _hooks, manager, (a,) = build(variant, net, {A: (1, 1, 0)}, clock)
        manager.start_heartbeat()
        try:
            clock.wait_for_sleepers(1)
            manager.clear(a.succeeded[0])
            clock.advance(manager.config.heartbeat_interval)
            kept = a.succeeded[0] in manager.addr_to_rooms_tracker.get(A, ())
        finally:
            manager.close()
    if errors.errors:
        return Observation("bug", f"thread died: {errors.describe()}")
    if kept:
        return Observation("bug", f"a successful probe left cleared room {a.succeeded[0]} in the room set")
    return Observation("ok", f"the cleared room {a.succeeded[0]} pruned on a successful probe")


CHECKS = (
    Check(
        "every-affected-room-failed",
        "every room waiting on a dead prefill is failed and no thread raises, wherever concurrent discards "
        "land in the loop",
        f"PR text: the rooms after the discard are never failed when the iteration raises; "
        f"_handle_node_failure: iterate a snapshot taken under connection_lock ({PR})",
        every_affected_room_failed,
        NEEDS,
    ),
    Check(
        "failed-prefill-forgotten",
        "a prefill declared dead leaves no info, cached entry or room set; its open rooms fail with a record",
        f"_handle_node_failure: drop the pool entries, info and tracker of the failed address ({PR})",
        failed_prefill_forgotten,
        NEEDS,
    ),
    Check(
        "probe-prunes-cleared-rooms",
        "a successful probe prunes cleared rooms from its prefill's room set",
        f"the heartbeat that calls _handle_node_failure: a 200 calls _on_heartbeat_success ({PR})",
        probe_prunes_cleared_rooms,
        NEEDS,
    ),
)
