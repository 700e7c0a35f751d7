"""The simulation's invariants: each lesson's executable spec, with where it comes from.

`cluster.py` checks them after every step and at the end of a run, and raises
`Violation` naming the invariant that broke. Each one is a behaviour any correct fix
has, read from what the variant exposes through the protocol (`request_status`,
`check_status`, `connection_pool`, `heartbeat_alive`, exceptions) and from what the
simulation itself did; none looks at which variant runs.
"""

from __future__ import annotations

from dataclasses import dataclass

PR = "https://github.com/sgl-project/sglang/pull/"


@dataclass(frozen=True)
class Invariant:
    id: str
    lesson: str  # the lesson whose spec it is; "*" for every lesson
    claim: str
    source: str


INVARIANTS = {
    inv.id: inv
    for inv in (
        Invariant("no-raise", "*", "no call the decode makes into a component raises",
                  f"{PR}36029: the cache lookup is one locked step; {PR}36351: the failure handler "
                  "must not raise"),
        Invariant("threads-alive", "*", "no background thread dies: the heartbeat of every manager runs "
                  "until it is closed", f"{PR}36351: 'the heartbeat thread dies and later failures go "
                  "unnoticed'"),
        Invariant("whole-state-bound", "*", "once every request has ended and been cleared, no container "
                  "reachable from the components (object graph, class and module attributes) is larger "
                  "than before the workload", f"{PR}24539: 'request_status grows by one per late "
                  "abort'; any fix: no memory per request"),
        Invariant("cleared-stays-cleared", "failed-resurrect", "a cleared room stays absent from "
                  "request_status until an opening status (a new receiver) reopens it",
                  f"{PR}24539, update_status: 'a late Failed must not re-create a cleared room'"),
        Invariant("failed-visible", "failed-resurrect", "a Failed written for an open room reads back "
                  "as Failed", f"{PR}24539 keeps `elif status == KVPoll.Failed: request_status[room] = "
                  "Failed` for open rooms"),
        Invariant("node-failure-fails-rooms", "live-set-race", "once the heartbeat has had its misses "
                  "for a dead prefill, every open room on it that is not Success is Failed",
                  f"{PR}36351, _handle_node_failure: every affected room is failed"),
        Invariant("failed-entry-invalidated", "stale-bootstrap", "a request that failed on a cached "
                  "prefill entry (its send raised, or its waiting timeout fired) leaves that entry "
                  "(that object) out of the cache, so the next request fetches /route again",
                  f"{PR}36029: invalidate_cached_bootstrap_infos on send failure and waiting timeout"),
        Invariant("failed-fill-not-cached", "stale-bootstrap", "a request whose init failed leaves "
                  "nothing new in the cache", f"{PR}36029: invalidate on fetch and registration failure"),
        Invariant("invalidate-own-only", "stale-bootstrap", "an invalidation removes only cache entries "
                  "the invalidating request used (identity: an equal-valued newer entry survives)",
                  f"{PR}36029: 'only the generation this receiver used' (`is`, not the key)"),
        Invariant("late-failed-leaves-no-record", "failure-records", "a late abort of a cleared request "
                  "leaves nothing behind (covered by whole-state-bound with late aborts on)",
                  "HARDEN(failure-records): record_failure only for an open room"),
    )
}  # fmt: skip


class Violation(Exception):
    """An invariant broke; `detail` says what was seen, `step` which step saw it."""

    def __init__(self, invariant: str, detail: str, step: int | None = None) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant, self.detail, self.step = invariant, detail, step

    @property
    def spec(self) -> Invariant:
        return INVARIANTS[self.invariant]
