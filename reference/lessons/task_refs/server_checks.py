"""Checks of lesson `task-refs` on the bootstrap server: its cleanup kept, and let go.

The server (in the prefill) runs `_cleanup_expired_entries` on its own loop thread.
As in the story's probe (`bootstrap_probe.py`), the cleanup waits for its rounds on a
`Metronome` that holds its waiters weakly, so a bare cleanup task is collectable; the
server runs on a `JumpLoop` whose clock the check moves past the 240 s an entry can
live. Rooms are registered through the mock transport (`POST /register_dp_rank`
handled in-process) and counted in `table.room_to_dp_rank`. Only the protocol is used:
the constructor's keyword arguments, `start`/`close`, `table`, `address`; the cleanup
task itself is found among the loop's tasks and watched through a weakref.
`closed_server_releases_port` is the one check that binds a port on every transport:
a server's `close()` must free it (nothing accepts there) and close its loop.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref
from contextlib import ExitStack
from types import ModuleType
from typing import Any

from reference.common.cleanup_ticks import Metronome
from reference.harness.loop_capture import loop_errors
from reference.harness.result import Observation
from reference.lessons.task_refs.bootstrap_probe import INTERVAL, JUMP, Run, on_server_loop
from reference.lessons.task_refs.finding import destroyed_problem
from reference.lessons.task_refs.weak_world import alive, young_heap
from reference.transport.kits import kit


async def _collect_and_list() -> set[weakref.ref[asyncio.Task[Any]]]:
    """`gc.collect()` on the server's thread; weakrefs to the tasks still pending there."""
    gc.collect()
    me = asyncio.current_task()
    return {weakref.ref(t) for t in asyncio.all_tasks() if t is not me and not t.done()}


def _rooms_left_after_a_jump(run: Run, net: Any, addr: str, batch: int) -> int:
    run.register(net, addr, batch)
    on_server_loop(run.loop, run.loop.advance(JUMP))
    return len(run.server.table.room_to_dp_rank)


def two_servers(variant: ModuleType, transport: str) -> Observation:
    problems: list[str] = []
    with young_heap(), ExitStack() as stack:
        runs = [Run(variant, transport, Metronome(INTERVAL, hold_waiters=False)) for _ in range(2)]
        errors = [stack.enter_context(loop_errors(run.loop)) for run in runs]
        served = [stack.enter_context(kit(transport).serving(run.server)) for run in runs]
        for run in runs:
            on_server_loop(run.loop, run.loop.settle())
        on_server_loop(runs[0].loop, _collect_and_list())
        for i, (run, (net, addr)) in enumerate(zip(runs, served, strict=True)):
            left = _rooms_left_after_a_jump(run, net, addr, 0)
            if left:
                problems.append(f"server {i + 1} kept {left} expired rooms with both running")
        runs[0].server.close()
        on_server_loop(runs[1].loop, _collect_and_list())
        left = _rooms_left_after_a_jump(runs[1], *served[1], 1)
        if left:
            problems.append(f"after server 1 closed, server 2 kept {left} expired rooms")
    destroyed = [name for caught in errors for name in caught.destroyed()]
    found = ([destroyed_problem(destroyed)] if destroyed else []) + problems
    if found:
        return Observation("bug", "; ".join(found))
    return Observation(
        "ok", "two servers kept their own cleanups through gc.collect(); closing one left the other"
    )


def closed_server_releases_task(variant: ModuleType, transport: str) -> Observation:
    with young_heap():
        run = Run(variant, transport, None)  # the server's own sleep, as upstream
        with kit(transport).serving(run.server):
            on_server_loop(run.loop, run.loop.settle())
            refs = list(on_server_loop(run.loop, _collect_and_list()))
        gc.collect()
        held = alive(refs)
    if not refs:
        return Observation("unknown", "the server started no background task")
    if held:
        return Observation(
            "bug",
            f"after close(), the server still holds {len(held)} finished task objects ({', '.join(held)}): "
            "the holding set never lets go (a leak per server)",
        )
    return Observation(
        "ok", f"close() cancelled the server's {len(refs)} background task(s) and let go of them"
    )


def _accepts(address: str) -> bool:
    """Whether something still accepts TCP connections at `address` (127.0.0.1:port)."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def closed_server_releases_port(variant: ModuleType, transport: str) -> Observation:
    """A server started on a port of 127.0.0.1 with a loop of the check's own: after
    `close()` nothing accepts at that port and the loop is closed (a prefill that restarts
    in the same process takes its port back; an open loop keeps its selector's fds)."""
    loop = asyncio.new_event_loop()
    server = variant.BootstrapServer(
        "127.0.0.1", 0, cleanup_interval=INTERVAL, entry_ttl=INTERVAL, now=loop.time, loop=loop, listen=True
    )
    server.start()
    address = server.address
    try:
        served = _accepts(address)
    finally:
        server.close()
    problems = [] if served else [f"the started server did not accept at {address}"]
    if _accepts(address):
        problems.append(f"after close(), {address} still accepts connections (its port is not freed)")
    if not loop.is_closed():
        problems.append("after close(), the server's event loop is still open")
        loop.close()
    if problems:
        return Observation("bug", "; ".join(problems))
    return Observation(
        "ok", "close() freed the server's port on 127.0.0.1 (connections refused) and closed its loop"
    )
