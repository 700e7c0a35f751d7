"""Checks of `failed-resurrect` in configurations `prefill_complete` and `deferred_release`
(upstream 0.5.23).

Under `--disaggregation-decode-allocation-policy prefill_complete` the decode reserves KV
only once the prefill says its forward is done. Two promises of that policy are about a
room's end, the lesson's subject, and run only on a variant that offers the configuration
(`reference/upstream/configs.py`: the upstream adapter; our forms do not model the policy);
each symptom names it.

`retired-receiver-abort` (the decode's side): a request ends in Success and is cleared;
an abort that reaches its receiver afterwards (a late callback, such as the prefill
recompute's error path upstream guards against) leaves that room alone (it stays cleared,
no failure record), and the receiver reads Failed from then on (its caller sees the abort).
When the room's id is reused by the next request, the old receiver's late abort leaves the
new request alone too. What is driven: the variant's `KVReceiver` (its `poll`, `clear`,
`abort`) and the statuses the decode's status handling writes into its `KVManager`.

`prefill-failure-told` (the prefill's side): a room the prefill fails (its request
aborted there) is told to the decode that bootstrapped it as Failed, once, and never as
ready (WaitingForInput: the decode would reserve KV and publish destinations for a
request that is gone), whether the decode's BOOTSTRAP arrived before the failure or after
it, and even when the prefill's forward completes after the failure; a room the prefill
completes is told ready once, then Success when it ends. What is driven: the
configuration's `PrefillKVManager` (its sender's `abort`, `mark_prefill_complete`, `clear`,
the decode's BOOTSTRAP message, the transfer's `conclude_transfer`), and what reaches the
decode's control endpoint (`DecodeEndpoint`).

`reused-room-abort-acked` (configuration `deferred_release`: the decode holds an aborted
room's pages until the prefill acknowledges that its transfer drained): a request whose KV
send fails unsettled (the transfer engine reports it) is told Failed and its decode's ABORT
is never acknowledged (the failed transfer may still be writing the pages); the next request
reusing the room's id, aborted before anything of it was sent, is acknowledged once (with
its own generation). What is driven: the prefill's sender (`init`, `send`), upstream's
transfer worker and bootstrap loop (the decode's registration, metadata and ABORT
messages), and what reaches the decode's control endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from reference.harness.options import Options
from reference.harness.result import Observation
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ROOM = 4100  # the room of the requests of `retired-receiver-abort`
ADDR = "127.0.0.1:8998"  # their prefill's bootstrap address (no prefill is asked)
SUCCESS_PATH = (KVPoll.WaitingForInput, KVPoll.Transferring, KVPoll.Success)


def _named(variant: ModuleType) -> str:
    configuration = getattr(variant, "CONFIGURATION", None)
    return f"configuration {getattr(configuration, 'name', '?')}"


def _succeeded(variant: ModuleType, manager: Any) -> tuple[Any, KVPoll]:
    """A request of `ROOM` whose prefill answered: the receiver, and what its poll read."""
    receiver = variant.KVReceiver(manager, ADDR, ROOM)
    for status in SUCCESS_PATH:  # what the decode's handling of the prefill's answers writes
        manager.update_status(ROOM, status)
    return receiver, KVPoll(receiver.poll())


def _left_alone(manager: Any, what: str, expect: KVPoll | None) -> str:
    """The problem ("" if none) with `ROOM` in the manager after an old receiver's abort."""
    status = manager.request_status.get(ROOM)
    if (None if status is None else KVPoll(int(status))) != expect or ROOM in manager.failure_records:
        shown = "absent" if status is None else KVPoll(int(status)).name
        recorded = ", a failure recorded for it" if ROOM in manager.failure_records else ""
        return f"{what}: the room reads {shown}{recorded}"
    return ""


def _retired_abort(variant: ModuleType, manager: Any) -> list[str]:
    problems = []
    old, seen = _succeeded(variant, manager)
    old.clear()
    old.abort()  # late: its request ended and was cleared
    after = KVPoll(old.poll())
    if seen != KVPoll.Success or after != KVPoll.Failed:
        problems.append(
            f"a request read {seen.name}, was cleared, then aborted: its receiver reads {after.name}"
        )
    problems.append(_left_alone(manager, "a cleared request's late abort", None))
    new, _ = _succeeded(variant, manager)  # the room's id reused by the next request
    old.abort()
    reused = "the room's next request, after the old receiver's late abort"
    problems.append(_left_alone(manager, reused, KVPoll.Success))
    new.clear()
    return [problem for problem in problems if problem]


def retired_receiver_abort(variant: ModuleType, _options: Options) -> Observation:
    manager = variant.KVManager(MockNetwork())
    try:
        problems = _retired_abort(variant, manager)
    finally:
        manager.close()
    if problems:
        return Observation("bug", f"{_named(variant)}: {'; '.join(problems)}")
    return Observation(
        "ok",
        f"{_named(variant)}: a cleared request's late abort reads Failed on its receiver and leaves its room "
        "alone, cleared or reused by the next request",
    )


def _failed_rooms(manager: Any, endpoint: Any) -> list[str]:
    """Rooms the prefill fails, the decode's BOOTSTRAP before the failure and after it."""
    problems = []
    for room, bootstrap_first in ((4201, True), (4202, False)):
        sender = manager.open(room)
        if bootstrap_first:
            manager.deliver(endpoint.bootstrap(room))
        manager.call(sender.abort)  # the prefill scheduler's abort of the request
        if not bootstrap_first:
            manager.deliver(endpoint.bootstrap(room))
        manager.call(sender.mark_prefill_complete)  # its forward completes anyway
        manager.call(sender.clear)
        told = endpoint.told(room, 1)
        if told != ["Failed"]:
            order = "after" if bootstrap_first else "before"
            problems.append(f"room {room} failed {order} the decode bootstrapped it: told {_shown(told)}")
    return problems


def _completed_room(manager: Any, endpoint: Any) -> list[str]:
    room = 4203
    sender = manager.open(room)
    manager.deliver(endpoint.bootstrap(room))
    manager.call(sender.mark_prefill_complete)
    manager.update_status(room, KVPoll.WaitingForInput)  # the decode's metadata arrived
    manager.call(manager.conclude_transfer, bootstrap_room=room, status=KVPoll.Success)
    manager.call(sender.clear)
    told = endpoint.told(room, 2)
    return [] if told == ["WaitingForInput", "Success"] else [f"room {room} completed: told {_shown(told)}"]


def _shown(told: list[str]) -> str:
    return ", then ".join(told) if told else "nothing"


def _one_endpoint(variant: ModuleType, steps: Callable[[Any, Any], list[str]], held: str) -> Observation:
    """Run `steps` on upstream's prefill manager with one decode endpoint; `bug` on any problem."""
    manager = variant.PrefillKVManager()
    endpoint = variant.DecodeEndpoint(manager)
    try:
        problems = steps(manager, endpoint)
    finally:
        endpoint.close()
        manager.close()
    if problems:
        return Observation("bug", f"{_named(variant)}: {'; '.join(problems)}")
    return Observation("ok", f"{_named(variant)}: {held}")


def prefill_failure_told(variant: ModuleType, _options: Options) -> Observation:
    return _one_endpoint(
        variant,
        lambda manager, endpoint: _failed_rooms(manager, endpoint) + _completed_room(manager, endpoint),
        "a room the prefill failed was told Failed once and never ready (bootstrapped before the failure "
        "and after it); a completed room was told ready, then Success",
    )


REUSED = 4300  # the room of `reused-room-abort-acked`


def _failed_send(manager: Any, endpoint: Any) -> list[str]:
    """A request of `REUSED` whose KV send fails (the engine reports it), then is aborted."""
    import numpy as np  # the `[upstream]` extra: these checks run only on sglang

    sender = manager.open(REUSED)
    manager.deliver(endpoint.metadata(REUSED))
    manager.call(sender.init, 2, 0)
    manager.call(sender.send, np.array([0, 1], dtype=np.int32))  # the transfer worker's send fails
    problems = []
    told = endpoint.told(REUSED, 1)
    if told != ["Failed"]:
        problems.append(f"room {REUSED}'s send failed: its decode was told {_shown(told)}")
    manager.deliver(endpoint.abort(REUSED, 1))  # the decode aborts it; the pages may still be written
    acked = endpoint.told(REUSED, 0)
    if acked:
        problems.append(f"room {REUSED} aborted after its send failed unsettled: told {_shown(acked)}")
    manager.call(sender.clear)
    return problems


def _reused(manager: Any, endpoint: Any) -> list[str]:
    """The next request of `REUSED`, aborted before any chunk of it was sent."""
    sender = manager.open(REUSED)
    manager.deliver(endpoint.abort(REUSED, 2))
    told = endpoint.told(REUSED, 1)
    manager.call(sender.clear)
    if told != ["ABORT_ACK 2"]:
        return [f"room {REUSED} reused by the next request, aborted with nothing sent: told {_shown(told)}"]
    return []


def _failed_send_then_reused(manager: Any, endpoint: Any) -> list[str]:
    manager.deliver(endpoint.registration())
    return _failed_send(manager, endpoint) + _reused(manager, endpoint)


def reused_room_abort_acked(variant: ModuleType, _options: Options) -> Observation:
    return _one_endpoint(
        variant,
        _failed_send_then_reused,
        "a room whose send failed unsettled was told Failed and its abort never acknowledged; the next "
        "request reusing the room, aborted with nothing sent, was acknowledged once",
    )


CROSSED = 4400  # the room of `acked-abort-stays-failed`
DECODE_TP = 2  # decode ranks reading the room's one prefill rank


def acked_abort_stays_failed(variant: ModuleType, _options: Options) -> Observation:
    manager = variant.PrefillKVManager()
    ranks = [variant.DecodeEndpoint(manager, rank, DECODE_TP) for rank in range(DECODE_TP)]
    first, second = ranks
    try:
        for rank in ranks:
            manager.deliver(rank.registration())
        sender = manager.open(CROSSED)
        manager.deliver(first.metadata(CROSSED))
        manager.deliver(first.abort(CROSSED, 1))  # the first decode rank aborts the room
        acked = first.told(CROSSED, 1)
        manager.deliver(second.metadata(CROSSED))  # the second rank's metadata, sent before it heard
        seen = KVPoll(int(manager.call(sender.poll)))
        manager.call(sender.clear)
    finally:
        for rank in ranks:
            rank.close()
        manager.close()
    if acked != ["ABORT_ACK 1"] or seen != KVPoll.Failed:
        return Observation(
            "bug",
            f"{_named(variant)}: room {CROSSED} aborted by one of its {DECODE_TP} decode ranks (told "
            f"{_shown(acked)}), then the other rank's metadata: the prefill's sender reads {seen.name}",
        )
    return Observation(
        "ok",
        f"{_named(variant)}: a room one decode rank aborted was acknowledged and stays Failed on the prefill "
        "when the other rank's metadata arrives afterwards",
    )
