"""The interleaving lesson `task-refs` forces, as data for a sequence diagram
(buggy when `fixed` is False); `reference.teaching.plots.sequence_picture` draws it."""

from __future__ import annotations

from reference.teaching.sequences import Sequence, Step

_TASK_ACTORS = ("DPDispatcher.start()", "event loop", "watchdog task", "exit notices", "worker rank 1")


def interleaving(fixed: bool) -> Sequence:
    S, L, W, X, K = _TASK_ACTORS
    held = (
        (Step(S, S, "self.background_tasks.add(task); on done: discard", "fix"),)
        if fixed
        else (Step(S, S, "result dropped: nothing but the loop's weak set holds it", "bug"),)
    )
    after = (
        (
            Step(L, W, "gc.collect(): reachable from background_tasks, kept", "fix"),
            Step(K, X, "exits: post a notice"),
            Step(X, W, "wake: mark rank 1 dead, fail its requests now (503)", "fix"),
        )
        if fixed
        else (
            Step(L, W, "gc.collect(): unreachable -> 'Task was destroyed but it is pending!'", "error"),
            Step(K, X, "exits: post a notice; no one is waiting"),
            # the counts the scenario measures (tests/test_teaching_plots.py checks them)
            Step(
                S, S, "its 2 in-flight requests hang 180 s (504); 1 of 4 new ones routed to rank 1", "error"
            ),
        )
    )
    return Sequence(
        f"task-refs, {'fixed' if fixed else 'buggy'} form (the DP dispatcher's watchdog)",
        _TASK_ACTORS,
        (
            Step(S, L, "create_task(_worker_watchdog())"),
            *held,
            Step(W, X, "await an Event only this task reaches (weakly held waiter)"),
            *after,
        ),
    )
