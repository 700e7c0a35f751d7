"""The checklist of lesson `task-refs`: what PR #33048 guarantees, one check each.

The fix keeps every background task a component starts in a set of its own, with
`add_done_callback(set.discard)`. Read hunk by hunk, that promises: each of the DP
dispatcher's three loops and the bootstrap server's cleanup survives `gc.collect()`
whatever it waits on; a loop that ended (finished, or cancelled by `close()`) is let go;
and each component instance holds its own tasks, so two in one process do not share
or drop each other's. Each check makes its one loop collectable in its own world
(`weak_world.py`, `server_checks.py`) and observes the loop's job, the loop's
"Task was destroyed" log line, and weakrefs; never the variant's private attributes.
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
        "listener-survives-gc",
        "the dispatcher's result listener survives gc.collect() when what it awaits holds it weakly",
        DISPATCHER_HUNK,
        _on_transport(dispatcher.listener_survives),
        ("DPDispatcher",),
    ),
    Check(
        "watchdog-survives-gc",
        "the dispatcher's worker watchdog survives gc.collect() and notices a rank's death",
        DISPATCHER_HUNK,
        _on_transport(dispatcher.watchdog_survives),
        ("DPDispatcher",),
    ),
    Check(
        "sweep-survives-gc",
        "the dispatcher's stale-mapping sweep survives gc.collect() and evicts mappings never sent",
        DISPATCHER_HUNK,
        _on_transport(dispatcher.sweep_survives),
        ("DPDispatcher",),
    ),
    Check(
        "cleanup-survives-gc",
        "the bootstrap server's cleanup survives gc.collect() and expires room_to_dp_rank entries",
        SERVER_HUNK,
        _on_transport(server.cleanup_survives),
        ("BootstrapServer",),
        BOTH,
    ),
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
        "two dispatchers in one process each keep their own loops; closing one leaves the other working",
        f"DPDispatcher.__init__: the set is the dispatcher's own, one per instance ({PR})",
        _on_transport(dispatcher.two_dispatchers),
        ("DPDispatcher",),
    ),
    Check(
        "two-servers-independent",
        "two bootstrap servers in one process each keep their own cleanup; closing one leaves the other",
        f"the bootstrap server's __init__: the set is the server's own, one per instance ({PR})",
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
