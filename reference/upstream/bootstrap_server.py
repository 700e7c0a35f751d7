"""`BootstrapServer` for lesson `task-refs`, built on upstream's own `CommonKVBootstrapServer`.

The class is made per loaded version: `BootstrapServer(ServerAdapter, CommonKVBootstrapServer)`.

Upstream code (run unchanged, from the wheel or tree):
- `__init__` (the aiohttp app, its routes, `room_to_dp_rank`, the lock; 0.5.19 adds
  `_background_tasks`), the route handlers, `_cleanup_expired_entries`, and
  `_run_server`: the new event loop, the cleanup task (the line PR #33048 changed: a
  bare `create_task` in 0.5.18, held in `_background_tasks` in 0.5.19), the aiohttp
  runner and TCP site, `run_forever`; `close`.

Adapter code (this file), the lesson's configuration applied to upstream as to ours:
- the constructor signature; `cleanup_interval` replaces the env-derived
  `entry_cleanup_interval` after upstream's constructor ran (upstream uses the one
  value as interval and as entry lifetime, so `entry_ttl` must equal it); upstream
  starts its thread in the constructor (`run()`), the adapter in `start()`, which waits
  (bounded) until the TCP site is bound;
- while upstream's `_run_server` runs, its thread is bound (`bound.py`) so that
  `asyncio.new_event_loop()` returns the scenario's loop (a `JumpLoop`),
  `time.time()` reads the scenario's `now` (the loop's clock) and, only while the
  task-refs trigger is on (`wiring.py`), the cleanup's `asyncio.sleep(interval)` waits
  for the scenario's next tick instead (`Metronome(hold_waiters=False)`: the
  configuration under which a bare task is collectable); otherwise it is the real
  sleep, upstream's own wiring. `cleanup_rounds` counts the sleeps that ended (the
  cleanup is the only code that sleeps on that thread);
- `table`: what the mock transport calls in-process. `handle(...)` runs upstream's own
  route handler on the server's loop with a minimal request (method, query, JSON
  body), as upstream's `_setup_routes` maps paths; `room_to_dp_rank` is upstream's. On
  loopback requests go over real HTTP to upstream's TCP site. Upstream always binds
  that site, so `listen=False` changes nothing here;
- `close()` first cancels a cleanup task still pending on the loop: upstream leaves it
  pending on a closed loop, which logs "Task was destroyed" whenever it is collected.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from reference.transport.base import Reply
from reference.upstream.bound import bound

START_TIMEOUT = 10.0  # real seconds for upstream's thread to bind its site
BOUND = 10.0  # real seconds for one call into the server's loop
CLEANUP = "_cleanup_expired_entries"
# Upstream's `_setup_routes`: path -> (handler, methods; None: any).
ROUTES: dict[str, tuple[str, frozenset[str] | None]] = {
    "/route": ("_handle_route", None),
    "/register_dp_rank": ("_handle_register_dp_rank", frozenset({"POST"})),
    "/query_dp_ranks": ("_handle_query_dp_ranks", frozenset({"POST"})),
    "/health": ("_handle_health_check", frozenset({"GET"})),
}


class _Request:
    """What upstream's handlers read of an aiohttp request."""

    def __init__(self, method: str, query: dict[str, str], body: bytes) -> None:
        self.method, self.query, self._body = method, dict(query), body

    async def json(self) -> Any:
        return json.loads(self._body or b"null")

    async def text(self) -> str:
        return self._body.decode()


class UpstreamTable:
    """The in-process face of upstream's server for the mock transport."""

    def __init__(self, server: ServerAdapter) -> None:
        self.server = server

    @property
    def room_to_dp_rank(self) -> dict:
        return self.server.room_to_dp_rank

    def handle(self, method: str, path: str, query: Any, body: bytes) -> Reply:
        name, methods = ROUTES.get(path, ("", None))
        if not name:
            return Reply(404, "Not Found")
        if methods is not None and method not in methods:
            return Reply(405, "Method Not Allowed")
        handler = getattr(self.server, name)
        future = asyncio.run_coroutine_threadsafe(handler(_Request(method, query, body)), self.server._loop)
        response = future.result(BOUND)
        if response.content_type == "application/json":
            return Reply(response.status, json.loads(response.text))
        return Reply(response.status, response.text)


class ServerAdapter:
    """Mixin placed before upstream's `CommonKVBootstrapServer` in the MRO (see the module doc)."""

    _triggers: Any  # wiring.Triggers of this loaded version
    # Upstream's attributes the adapter reads or sets.
    host: str
    thread: Any
    room_to_dp_rank: dict
    entry_cleanup_interval: float
    _loop: asyncio.AbstractEventLoop
    _runner: Any

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        cleanup_interval: float = 120.0,
        entry_ttl: float = 120.0,
        now: Callable[[], float] | None = None,
        cleanup_ticks: Any = None,
        loop: asyncio.AbstractEventLoop | None = None,
        listen: bool = True,
    ) -> None:
        if entry_ttl != cleanup_interval:
            raise ValueError("upstream's cleanup uses one value as interval and entry lifetime")
        self.cleanup_rounds = 0
        # The scenario's tick source is the task-refs trigger: used only while `decide`
        # adds it (wiring.py); otherwise upstream's own asyncio.sleep paces the cleanup.
        ticks = cleanup_ticks if self._triggers.active("task-refs") else None
        self._binding = {"now": now, "loop": loop, "ticks": ticks, "on_sleep": self._count_round}
        super().__init__(host, port)  # type: ignore[call-arg]
        self.entry_cleanup_interval = cleanup_interval
        self.table = UpstreamTable(self)

    def _count_round(self) -> None:
        self.cleanup_rounds += 1

    def run(self) -> None:
        """Upstream starts its thread here, from the constructor; the adapter in `start()`."""

    def _run_server(self) -> None:
        with bound(**self._binding):
            super()._run_server()  # type: ignore[misc]

    def start(self) -> ServerAdapter:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._serving():
            if not self.thread.is_alive():
                raise RuntimeError("upstream's bootstrap server thread ended while starting")
            if time.monotonic() > deadline:
                raise RuntimeError(f"upstream's bootstrap server did not bind within {START_TIMEOUT} s")
            time.sleep(0.002)  # upstream offers no started event: poll, bounded
        return self

    def _serving(self) -> bool:
        runner = getattr(self, "_runner", None)
        return runner is not None and bool(runner.addresses)

    @property
    def address(self) -> str:
        return f"{self.host}:{self._runner.addresses[0][1]}"

    def close(self, timeout: float = 2.0) -> None:
        loop = getattr(self, "_loop", None)
        if loop is None:
            return
        if loop.is_running():
            future = asyncio.run_coroutine_threadsafe(_cancel_cleanup(), loop)
            future.result(BOUND)
        super().close()  # type: ignore[misc]


async def _cancel_cleanup() -> None:
    mine = [
        task
        for task in asyncio.all_tasks()
        if getattr(task.get_coro(), "__name__", "") == CLEANUP and not task.done()
    ]
    for task in mine:
        task.cancel()
    await asyncio.gather(*mine, return_exceptions=True)


def server_class(upstream: type, label: str, triggers: Any) -> type:
    """The scenarios' `BootstrapServer` for one loaded version's `CommonKVBootstrapServer`."""
    return type(
        "BootstrapServer",
        (ServerAdapter, upstream),
        {
            "_triggers": triggers,
            "__module__": f"reference.upstream[{label}]",
            "__doc__": f"Upstream {label} CommonKVBootstrapServer, driven by {__name__}.",
        },
    )
