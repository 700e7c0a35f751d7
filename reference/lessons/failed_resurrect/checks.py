"""The checklist of lesson `failed-resurrect`: what PR #24539 guarantees, one check each.

The fix is two lines in `update_status`: a Failed for a room that is absent (cleared) is
a no-op. Read with the PR's text, it promises more than the story shows. The simulation
(`reference/sim`, the deep `simulation` check) generates those promises' workloads: a
cleared room stays cleared (`cleared-stays-cleared`, a stale Failed before a reused id
opens included), a Failed for an open room reads Failed (`failed-visible`), nothing grows
per request (`whole-state-bound`, `request_status` included); a fix that stops a first
write from opening a room breaks the requests it opens (the gallery's `ignore_absent_always`:
`poll` raises, `no-raise`). Two checks stay hand-built, for what the simulation does not do:

- a late Failed never re-creates a cleared room, whatever state the room was cleared in
  and from several threads at once (the simulation writes from one thread at a time);
- a Failed for an open room, fresh or a reused id, is still stored: on an upstream release
  (`--sglang`) this is the check that decides 0.5.11 in a run without deep checks (its
  `abort()` writes no Failed, so the story passes).

Every check drives only the variant protocol (`update_status`, `check_status`, `clear`,
`record_failure`, `request_status`) on the mock transport; none reads how a fix works.
"""

from __future__ import annotations

import threading
from types import ModuleType

from reference.harness.capture import thread_errors
from reference.harness.checks import Check, deferred
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

PR = "https://github.com/sgl-project/sglang/pull/24539"
CONFIGURED = "reference.upstream.configured.failed_resurrect"
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


CHECKS = (
    Check(
        "late-failed-never-recreates",
        "a late Failed after clear(), from any thread, never re-creates the room, whatever its state was",
        f"update_status: an absent room plus Failed returns without storing ({PR})",
        late_failed_never_recreates,
    ),
    Check(
        "open-room-takes-failed",
        "a Failed for an open room, fresh or a reused id, is still stored",
        f"update_status: the present-room branch is unchanged, Failed overrides ({PR})",
        open_room_takes_failed,
    ),
    # In upstream's `prefill_complete` and `deferred_release` configurations
    # (reference/upstream/configs.py); our forms model neither, so only a variant offering
    # one runs these. Their bodies live with the configurations (reference/upstream/configured).
    Check(
        "retired-receiver-abort",
        "a late abort of a cleared request reads Failed on its receiver, its room left alone (reused or not)",
        "CommonKVReceiver.abort/clear under prefill_complete (0.5.23): a cleared receiver no longer owns its "
        f"room; the abort fix's promise that a late Failed never lands on a cleared room ({PR})",
        deferred(CONFIGURED, "retired_receiver_abort"),
        configuration="prefill_complete",
    ),
    Check(
        "prefill-failure-told",
        "a room the prefill fails is told to its decode as Failed once, never ready; a completed one, ready",
        "CommonKVManager.update_status under prefill_complete (0.5.23): a Failed for a present room tells "
        f"the rendezvous table, which tells the decode (_notify_bootstrap) ({PR})",
        deferred(CONFIGURED, "prefill_failure_told"),
        configuration="prefill_complete",
    ),
    Check(
        "reused-room-abort-acked",
        "a room whose send failed unsettled is never ABORT_ACKed; the next request reusing its id is, once",
        "CommonKVManager.update_status under deferred KV release (0.5.23): a room's opening status drops "
        f"the deferred-ACK state (poisoned rooms) a previous request of the id left ({PR})",
        deferred(CONFIGURED, "reused_room_abort_acked"),
        configuration="deferred_release",
    ),
    Check(
        "acked-abort-stays-failed",
        "a room whose abort the prefill acknowledged stays Failed when another decode rank's metadata comes",
        "CommonKVManager.update_status (0.5.23): Failed is terminal, the max() would lift it; under deferred "
        f"KV release the ABORT_ACK promises the decode's pages are no longer written ({PR})",
        deferred(CONFIGURED, "acked_abort_stays_failed"),
        configuration="deferred_release",
    ),
    Check(
        "rendezvous-abort-told",
        "a bootstrapped request given up on tells its prefill rank once; one that ended, aborted late, never",
        "CommonKVReceiver.abort under prefill_complete (0.5.23): the wait for the prefill's forward ends in "
        "abort(), which tells the prefill; a cleared receiver no longer owns its room, so its late abort "
        f"tells nothing ({PR})",
        deferred(f"{CONFIGURED}_rendezvous", "rendezvous_abort_told"),
        configuration="prefill_complete",
    ),
)
