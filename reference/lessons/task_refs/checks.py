"""The checklist of lesson `task-refs`: what PR #33048 guarantees, one check each.

The fix keeps every background task a component starts in a set of its own, with
`add_done_callback(set.discard)`. Read hunk by hunk, that promises: each of the DP
dispatcher's three loops and the bootstrap server's cleanup survives `gc.collect()`
whatever it waits on; a loop that ended (finished, or cancelled by `close()`) is let go;
and each component instance holds its own tasks, so two in one process do not share
or drop each other's. The story makes the watchdog and the server's cleanup collectable;
`two-dispatchers-independent` makes every dispatcher loop collectable at once (and
`two-servers-independent` every server's cleanup) in its own world (`weak_world.py`,
`server_checks.py`) and observes each loop's job, its "Task was destroyed" log line, and
weakrefs; never the variant's private attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from reference.harness.checks import Body, Check
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.task_refs import dispatcher_checks as dispatcher
from reference.lessons.task_refs import server_checks as server

PR = "https://github.com/sgl-project/sglang/pull/33048"
DISPATCHER_HUNK = f"DPDispatcher.start: each create_task kept in a set, discarded when done ({PR})"
BOTH = ("mock", "loopback")  # the server's checks also run over real HTTP on 127.0.0.1
SERVER_HUNK = f"the bootstrap server's cleanup task kept in a set, discarded when done ({PR})"


def _on_transport(scenario: Callable[[ModuleType, str], Observation]) -> Body:
    def body(variant: ModuleType, options: Options) -> Observation:
        return scenario(variant, options.transport)

    return body


CHECKS = (
    Check(
        "ended-loops-released",
        "a dispatcher loop that finished, or that close() cancelled, is let go (no task object leaks)",
        f"DPDispatcher.start: the done callback that discards each task from the set ({PR})",
        _on_transport(dispatcher.ended_loops_released),
        ("DPDispatcher",),
    ),
    Check(
        "closed-server-releases-task",
        "a closed bootstrap server lets go of its cancelled cleanup task (no task object leaks)",
        f"the server's cleanup: the done callback that discards the task from the set ({PR})",
        _on_transport(server.closed_server_releases_task),
        ("BootstrapServer",),
        BOTH,
    ),
    Check(
        "two-dispatchers-independent",
        "every loop of two dispatchers, each collectable, survives gc.collect() and does its job (answers, a "
        "death noticed, a sweep); closing one dispatcher leaves the other's working",
        f"{DISPATCHER_HUNK}; DPDispatcher.__init__: the set is the dispatcher's own, one per instance",
        _on_transport(dispatcher.two_dispatchers),
        ("DPDispatcher",),
    ),
    Check(
        "two-servers-independent",
        "two bootstrap servers' cleanups, each collectable, survive gc.collect() and expire rooms; closing "
        "one server leaves the other's",
        f"{SERVER_HUNK}; the bootstrap server's __init__: the set is the server's own, one per instance",
        _on_transport(server.two_servers),
        ("BootstrapServer",),
        BOTH,
    ),
    Check(
        "closed-server-releases-port",
        "a closed bootstrap server frees its port (nothing accepts there) and closes its event loop",
        f"the server's loop thread, whose background task the PR keeps: its runner cleaned up and its loop "
        f"closed when it ends ({PR})",
        _on_transport(server.closed_server_releases_port),
        ("BootstrapServer",),
        BOTH,
    ),
)
