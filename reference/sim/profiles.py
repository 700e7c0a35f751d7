"""Which faults each lesson's simulation switches on (each run then takes a swarm of them).

A fix lesson's profile holds the faults its upstream fix is about and the ones any
request meets (restarts, kills, lost messages, heartbeat misses, time jumps, garbage
collection), but not the combinations that trigger a residual defect upstream's fix
leaves open (those are the residual lessons' profiles): a late Success lifting a Failed
room, or a late abort, keep a failure record for ever in upstream's code
(`failure-records`), and a reused room id takes an earlier request's late writes
(`room-reuse`). So `fixed` is `ok` on the four fix lessons and `bug` where upstream is
open, and a module given with `--impl`, expected `ok` everywhere, meets every fault.
"""

from __future__ import annotations

from reference.sim.plan import Profile

EVERYDAY = ("kill", "drop", "hb_miss", "timeout", "gc", "latency")

PROFILES: dict[str, Profile] = {
    "failed-resurrect": Profile((*EVERYDAY, "fail_open", "late_failed", "race_cleanup", "restart_new")),
    "live-set-race": Profile(  # (unhealthy last: the swarm's coins for the others stay as they were)
        (*EVERYDAY, "race_cleanup", "fail_open", "restart_new", "restart_same", "unhealthy"),
        always=("unhealthy",),  # scripted /health answers in every run: what a miss is, how many declare
        steer=False,  # its faults are about the heartbeat, not about cache generations
    ),
    "stale-bootstrap": Profile(
        (*EVERYDAY, "restart_new", "restart_same", "pause", "slow_send", "refuse_send")  # (appended: the
    ),  # swarm's coins for the earlier faults stay as they were)
    "failure-records": Profile(
        (
            *EVERYDAY,
            "late_abort",
            "late_failed",
            "delay_status",
            "pause",
            "fail_open",
            "abort_clear",
            "late_record",
            "mooncake",
            "rank_failed",
            "slow_send",
        )
    ),
    "room-reuse": Profile(
        (
            *EVERYDAY,
            "reuse",
            "reuse_late_answer",
            "late_abort",
            "late_failed",
            "delay_status",
            "pause",
            "fail_open",
            "abort_clear",
            "late_status",
        ),
        weight=3,  # a request, then a late or concurrent write to its room: faults next to requests
        always=("latency",),  # answers in flight while the room is failed, aborted or reused
    ),
    "restart-recovery": Profile(
        (
            "restart_new",
            "restart_same",
            "restart_in_flight",
            "kill",
            "restart_before_send",
            "stuck",
            "quick_restart",
            "gc",
            "timeout",
            "pause",
            "drop",
        ),
        weight=3,  # a restart, then a request in its window, then polls: three of its faults in a row
        always=("latency",),  # requests in flight when their prefill goes away
        steer=False,  # its faults are about a prefill going away, not about cache generations
    ),
    "stale-tracker": Profile((*EVERYDAY, "race_cleanup_late", "restart_new")),
}
