"""The simulation's invariants: each lesson's executable spec, with where it comes from.

`cluster.py` checks them after every step and at the end of a run, and raises
`Violation` naming the invariant that broke. Each one is a behaviour any correct fix
has, read from what the variant exposes through the protocol (`request_status`,
`connection_pool`, `heartbeat_alive`, exceptions) and from what the simulation itself
did; none looks at which variant runs. A lesson's `simulation` check checks the
invariants of every lesson (`*`) and its own.
"""

from __future__ import annotations

from dataclasses import dataclass

PR = "https://github.com/sgl-project/sglang/pull/"
AFTER_24539 = f"residual after {PR}24539"
AFTER_36029 = f"residual after {PR}36029"


@dataclass(frozen=True)
class Invariant:
    id: str
    lesson: str  # the lesson whose spec it is; "*" for every lesson
    claim: str
    source: str
    also: tuple[str, ...] = ()  # other lessons that check it too

    def checked_by(self, lesson: str) -> bool:
        return self.lesson in ("*", lesson) or lesson in self.also


_ALL = (
    Invariant(
        "no-raise", "*", "no call the decode makes into a component raises",
        f"{PR}36029: the cache lookup is one locked step; {PR}36351: the failure handler must not raise",
    ),
    Invariant(
        "threads-alive", "*",
        "no background thread dies: every manager's heartbeat runs until closed, as a daemon thread",
        f"{PR}36351: the heartbeat thread dies and later failures go unnoticed; the heartbeat that calls "
        "_handle_node_failure: threading.Thread(..., daemon=True)",
    ),
    Invariant(
        "whole-state-bound", "*",
        "once every request has ended and been cleared (and 20 virtual minutes passed), no container "
        "reachable from the components (object graph, class and module attributes) is larger than before",
        f"{PR}24539: request_status grows by one per late abort; HARDEN(failure-records), "
        f"{AFTER_24539}: no memory per request",
    ),
    Invariant(
        "cleared-stays-cleared", "failed-resurrect",
        "a cleared room stays absent from request_status until an opening status reopens it",
        f"{PR}24539, update_status: a late Failed does not re-create a cleared room",
    ),
    Invariant(
        "failed-visible", "failed-resurrect", "a Failed written for an open room reads back as Failed",
        f"{PR}24539 keeps `elif status == KVPoll.Failed` for open rooms",
    ),
    Invariant(
        "node-failure-fails-rooms", "live-set-race",
        "once the heartbeat has had its misses for a dead prefill, every open room on it that is not "
        "Success is Failed",
        f"{PR}36351, _handle_node_failure: every affected room is failed; HARDEN(stale-tracker): a late "
        "cleanup never pops a re-registered prefill's tracker set",
        ("stale-tracker",),
    ),
    Invariant(
        "dead-only-after-misses-in-a-row", "live-set-race",
        "a heartbeat declares a prefill dead (`_handle_node_failure`) only once max_failures of its /health "
        "probes in a row missed (refused, an error status, a connect later than 2 s or an answer later than "
        "3 s; a 200 resets the count), and declares it in the round of the probe that makes them that many",
        f"{PR}36351, the heartbeat that calls _handle_node_failure: GET /health with timeout=(2, 3), a 200 "
        "resets heartbeat_failures, max_failures of them call the handler",
    ),
    Invariant(
        "failed-entry-invalidated", "stale-bootstrap",
        "a request that failed on a cached prefill entry (its send raised, or its waiting timeout fired) "
        "leaves that entry (that object) out of the cache, so the next request fetches /route again",
        f"{PR}36029: invalidate_cached_bootstrap_infos on send failure and waiting timeout; "
        "HARDEN(restart-recovery) item 4: the fixed form's invalidations stay",
        ("restart-recovery",),
    ),
    Invariant(
        "failed-fill-not-cached", "stale-bootstrap", "a request whose init failed leaves nothing new cached",
        f"{PR}36029: invalidate on fetch and registration failure",
    ),
    Invariant(
        "invalidate-own-only", "stale-bootstrap",
        "an invalidation removes only cache entries the invalidating request used (identity: an "
        "equal-valued newer entry survives)",
        f"{PR}36029: only the generation this receiver used (`is`, not `==` nor the key)",
    ),
    Invariant(
        "dead-prefill-disconnected", "stale-bootstrap",
        "once the heartbeat declares a prefill dead, no cached entry names its ports, and each rank endpoint "
        "its cached entries named at that moment is disconnected (an entry already dropped, when the ranks' "
        "connections closed, leaves nothing to disconnect)",
        f"{PR}36029: the failure handler drops the entries this PR caches and calls "
        "`disconnect_endpoint` for each rank endpoint they named (sglang 0.5.14 on)",
    ),
    Invariant(
        "abort-reaches-prefill", "stale-bootstrap",
        "a request its waiting timeout failed has told each prefill rank it bootstrapped from whose process "
        "still bound there took its metadata to drop its room once (ABORT), any other rank at most once; no "
        "later abort() tells a rank again",
        f"{PR}36029, `_check_waiting_timeout`: update_status(Failed), invalidate, then the abort "
        "notification, once (`abort_notified`)",
    ),
    Invariant(
        "aborted-stays-failed", "stale-bootstrap",
        "an aborted request has a failure recorded and Failed in the table, and reads Failed at every later "
        "poll, also after a Success for its room landed (an answer already on its way)",
        f"{PR}24522, abort(): record_failure, update_status(Failed), latch (conclude_state); {PR}36029 "
        "shares its notification with the waiting timeout",
    ),
    Invariant(
        "send-failure-stops-sends", "stale-bootstrap",
        "a metadata send refused on one prefill rank sends the metadata to no rank after it, and the request "
        "does not read Success at the next poll",
        f"{PR}36029, mooncake `send_metadata`: on ZMQError invalidate, record, write Failed and return",
    ),
    Invariant(
        "send-after-failed-init", "stale-bootstrap",
        "send_metadata on a receiver whose init failed raises nothing, and the room stays Failed with its "
        "failure recorded",
        f"{PR}36029, `send_metadata`: no bootstrap infos (the fetch failed): record, write Failed, return",
    ),
    Invariant(
        "cleared-stays-cleared-any-status", "room-reuse", "no status but an opening one re-creates a room",
        f"HARDEN(room-reuse), {AFTER_24539}: only Bootstrapping opens a room",
    ),
    Invariant(
        "failed-is-terminal", "room-reuse", "a room that read Failed stays Failed until it is cleared",
        f"HARDEN(room-reuse), {AFTER_24539}: Failed is terminal",
    ),
    Invariant(
        "reused-room-unaffected", "room-reuse",
        "a late abort of a request whose room id was reused does not fail the new request",
        f"HARDEN(room-reuse), {AFTER_24539}: per-room lifecycle ownership",
    ),
    Invariant(
        "success-after-own-metadata", "room-reuse", "a request reads Success only after it sent its metadata",
        f"HARDEN(room-reuse), {AFTER_24539}: transfer statuses count only after the metadata",
    ),
    Invariant(
        "answers-per-lifecycle", "room-reuse",
        "a request turns Success only once as many of its prefill's ranks as it waits for delivered a "
        "Success for its room after it sent its metadata (an answer counted for the room's previous "
        "request is not its own)",
        f"HARDEN(room-reuse), {AFTER_24539}: a new lifecycle clears the room's leftovers (response tracker)",
    ),
    Invariant(
        "failure-reason-kept", "failure-records",
        "a failed request's exception carries the reason recorded for it",
        f"HARDEN(failure-records), {AFTER_24539}: failure_exception takes the reason, then clears",
    ),
    Invariant(
        "no-record-without-failure", "failure-records",
        "a request that ends Success has no failure record for its room: a record names a failure "
        "that happened",
        f"{PR}36029, `_check_waiting_timeout`: the timeout is recorded only once it passed; "
        f"HARDEN(failure-records), {AFTER_24539}: records only for a request that failed",
    ),
    Invariant(
        "timeout-counts-from-send", "failure-records",
        "a request fails on its waiting timeout only once the timeout passed since its metadata send "
        "returned: a send that blocked (a full queue) does not eat into the request's wait",
        f"{PR}36029, `send_metadata`: `init_time` is set once every send returned (sglang 0.5.19, "
        "https://pypi.org/project/sglang/0.5.19/), and `_check_waiting_timeout` counts from it; "
        f"HARDEN(failure-records), {AFTER_24539}: a record names a failure that happened",
        ("stale-bootstrap",),
    ),
    Invariant(
        "exception-latches-failed", "failure-records",
        "once the scheduler took a request's exception (`failure_exception()`), also for a request that "
        "failed on another decode rank (its own poll had not failed), its receiver polls Failed, raising "
        "nothing",
        "upstream's `failure_exception` latches Failed for a request that failed on another rank (sglang "
        "0.5.11 to 0.5.23, https://pypi.org/project/sglang/0.5.19/), taken by the decode scheduler once the "
        "poll all-reduced over the ranks (MIN) reads Failed; HARDEN(failure-records)",
    ),
    Invariant(
        "restart-recovered", "restart-recovery",
        "a request whose prefill went away and came back (a restart, a kill, ranks slow to register), and "
        "lost or held none of its messages, fails only if its prefill was gone for a heartbeat interval",
        f"HARDEN(restart-recovery), {AFTER_36029}: no request after the registration may fail; a request "
        "arriving during a restart waits (item 2); one caught in flight is resent (item 3)",
    ),
    Invariant(
        "bounded-wait", "restart-recovery",
        "a request waiting for its prefill (killed, or its ranks not registered) ends by the waiting timeout",
        f"HARDEN(restart-recovery) item 2, {AFTER_36029}: the wait ends, Failed, at the waiting timeout",
    ),
    Invariant(
        "sent-request-ends", "restart-recovery",
        "a request whose metadata the scheduler sent ends by itself (Success or Failed) once its faults "
        "healed and a waiting timeout passed with the scheduler polling: none is left for an abort",
        f"{PR}36029, `_check_waiting_timeout`: a request waiting for its KV fails at the waiting timeout; "
        f"HARDEN(restart-recovery) item 2, {AFTER_36029}: metadata held while the prefill restarts is "
        "sent once it answered",
        ("stale-bootstrap",),
    ),
    Invariant(
        "retry-backs-off", "restart-recovery",
        "polled every 1 ms for 200 ms, a request waiting for its prefill fetches /route at most 50 times",
        f"HARDEN(restart-recovery) item 2, {AFTER_36029}: the wait's ceiling doubles up to 50 ms",
    ),
)  # fmt: skip
INVARIANTS = {invariant.id: invariant for invariant in _ALL}


def checked_by(lesson: str) -> frozenset[str]:
    """The invariants a lesson's simulation checks: every lesson's and its own."""
    return frozenset(i.id for i in _ALL if i.checked_by(lesson))


class Violation(Exception):
    """An invariant broke; `detail` says what was seen, `step` which step saw it."""

    def __init__(self, invariant: str, detail: str, step: int | None = None) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant, self.detail, self.step = invariant, detail, step

    @property
    def spec(self) -> Invariant:
        return INVARIANTS[self.invariant]
