"""Run one plan against one variant: set up, warm up, every step and its checks, drain.

`run_plan(variant, plan)` returns a `Run`: the violation (or None), the log of what
happened, and the number of requests. The same plan gives the same run on every
machine: the plan holds every choice, the clock is virtual, and the heartbeat threads
run one at a time at fixed virtual instants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

from reference.harness.capture import thread_errors
from reference.sim.cluster import Cluster
from reference.sim.health import unhealthy
from reference.sim.invariants import Violation
from reference.sim.plan import Plan


@dataclass
class Run:
    plan: Plan
    violation: Violation | None
    log: list[tuple[float, str, str]] = field(default_factory=list)
    requests: int = 0
    overlap: float = 0.0  # the most cache generations of one key in use at once (the search's target)


def run_plan(variant: ModuleType, plan: Plan, checking: frozenset[str] | None = None) -> Run:
    """Run `plan`; `checking` names the invariants to check (None: every one)."""
    with thread_errors() as errors:
        cluster = Cluster(variant, plan, errors, checking)
        violation, overlap = None, 0.0
        try:
            cluster.start()
            cluster.warm_up()
            baseline = cluster.sizes()
            for index, step in enumerate(plan.steps):
                cluster.step_index = index
                _step(cluster, *step)
                cluster.check_always()
                overlap = max(overlap, cluster.overlap())
            cluster.step_index = None
            cluster.drain()
            cluster.check_always()
            cluster.check_bound(baseline)
        except Violation as exc:
            exc.step = cluster.step_index
            violation = exc
        finally:
            cluster.close()
        if violation is None and errors.errors:
            violation = Violation("threads-alive", f"a thread raised: {errors.describe()}")
    return Run(plan, violation, cluster.log, cluster.opened, overlap)


STREAM = 6  # requests in one `stream` step


def _step(c: Cluster, kind: str, a: int, b: int) -> None:
    request = c.open[a % len(c.open)] if c.open else None
    old = c.ended[a % len(c.ended)] if c.ended else None
    ended = (old.manager, old.room) if old is not None else None
    p, m = a % len(c.prefills), a % len(c.managers)
    if kind in ("open", "request"):
        opened = c.open_request(m, b % len(c.prefills), None)
        if opened is not None and kind == "request":
            c.init(opened)
            c.send(opened)
    elif kind == "stream":
        for _ in range(STREAM):
            _step(c, "request", a, b)
            _step(c, "wait", a % 4 + 1, b)
    elif kind == "poll":
        _poll_all(c, a)
    elif kind in ("wait", "tick", "timeout"):
        seconds = {"wait": (a + 1) * 20.0, "tick": 5.0, "timeout": 300.0}[kind]
        c.advance(seconds, kind)
        _poll_all(c, a)  # the scheduler polls every request on each pass: it sees a timeout at once
    elif kind == "reuse" and ended is not None and not any((r.manager, r.room) == ended for r in c.open):
        c.open_request(ended[0], b % len(c.prefills), ended[1])
    elif kind == "reuse_late_answer" and old is not None and ended in c.cleared and c.can_open(old):
        c.late_answer(old, b)  # (a room not reopened yet, on a prefill a request can open on now)
        reused = c.open_request(old.manager, old.prefill, old.room)
        if reused is not None:  # a whole request: opened, inited, its metadata sent
            c.init(reused)
            c.send(reused)
    elif kind == "rank_failed":  # an open request, or else a new one (opened, inited, sent)
        if request is None:
            _step(c, "request", m, b)
        if c.open:
            c.rank_failed(c.open[a % len(c.open)])
    elif kind in ("init", "send", "abort", "fail_open", "abort_clear") and request is not None:
        getattr(c, kind)(request)
    elif kind == "end_status" and c.parked:
        c.release_parked()
    elif kind == "end_status" and c.cleanups:
        c.cleanup(a)
    elif kind == "late_failed" and ended is not None:
        c.late_failed(*ended)
    elif kind == "late_status" and ended in c.cleared:  # (a reopened room's status is its new request's)
        c.late_status(*ended, success=b % 2 == 0)
    elif kind == "late_record" and ended in c.cleared:
        c.late_record(*ended)
    elif kind == "late_abort" and old is not None:
        c.late_abort(old)
    elif kind == "restart_in_flight":
        _step(c, "request", m, p)
        c.restart(p, same_ports=False)
    elif kind == "restart_before_send" and c.plan.sockets == "fail-fast":  # (the send raises; with
        opened = c.open_request(m, p, None)  # upstream's sockets hardened has no answer: sim/README.md)
        if opened is not None:
            c.init(opened)
            c.restart(p, same_ports=False)
            c.send(opened)
    elif kind in ("restart_new", "restart_same"):
        c.restart(p, same_ports=kind == "restart_same")
    elif kind == "kill" and not c.stuck[p]:
        c.toggle_kill(p)
    elif kind == "stuck":
        c.slow_restart(p)
    elif kind == "quick_restart" and not c.stuck[p] and c.down_since[p] is None:
        c.toggle_stuck(p)
        _step(c, "request", m, p)
        c.busy_poll()
        c.toggle_stuck(p)
        _poll_all(c, 0)
    elif kind == "pause":
        c.pause(p)
    elif kind == "drop":
        c.drop(p, b)
    elif kind == "slow_send":
        c.slow_send(m, p)
        _poll_all(c, a)
    elif kind == "refuse_send":
        c.notices.refuse_send(m, p, b)
        _poll_all(c, a)
    elif kind == "delay_status":
        c.delay_status(m)
    elif kind == "hb_miss":
        c.misses.add(p)
    elif kind == "unhealthy":
        unhealthy(c, p, a // len(c.prefills), b, lambda: _poll_all(c, a))
    elif kind in ("race_cleanup", "race_cleanup_late"):
        c.race_cleanup(m, late=kind == "race_cleanup_late")
    elif kind == "gc":
        c.collect()


def _poll_all(c: Cluster, start: int) -> None:
    """One scheduler pass: poll every open request, starting at the `start`-th."""
    if c.open:
        first = start % len(c.open)
        for request in c.open[first:] + c.open[:first]:
            c.poll(request)
