"""The bootstrap server's HTTP layer and thread (upstream `CommonKVBootstrapServer`).

As upstream, the server runs on a daemon thread with its own event loop: `start()`
binds the port (so a busy port fails right there, in the caller), starts the thread,
which creates the cleanup task, sets up an aiohttp `AppRunner` and runs the loop
forever; `close()` stops the loop thread-safely, joins the thread (bounded) and frees
the port. The routes' logic is `BootstrapTable.handle`; this layer only reads the
body (413 over `max_body`, 408 if it takes over `read_timeout`), calls it and encodes
the `Reply` (a 405 carries `Allow`). Connections are `bootstrap_http.OneLineErrors`:
one-line parser errors, `read_timeout` for a request head, one rate-limited log line
per rejected request, no access log.

The cleanup task (`_cleanup_expired_entries`: sleep `cleanup_interval`, then drop
`room_to_dp_rank` entries older than `entry_ttl`; upstream: 120 s and 120 s) is created
by `_start_background_tasks`, which each variant provides: that is where lesson
`task-refs` (PR #33048) lives, a bare `create_task` against a held reference.

Three options exist for that lesson and leave the default server as upstream's:
`cleanup_ticks` (what the cleanup waits on between rounds; default: its own sleep,
see `cleanup_ticks.py`), `loop` (the event loop the thread runs, e.g. a `JumpLoop`;
the server closes it) and `listen=False` (no socket and no HTTP site: the mock
transport calls `table.handle` in-process while the thread, the loop and the cleanup
run as usual).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from reference.common.bootstrap_http import READ_TIMEOUT, SHUTDOWN_TIMEOUT, serve
from reference.common.bootstrap_table import MAX_ROOMS, ROUTES, BootstrapTable
from reference.common.cleanup_ticks import SleepTicks, Ticks
from reference.transport.base import Reply

MAX_BODY = 64 * 1024
START_TIMEOUT = 10.0  # real seconds for the server thread to come up


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket; SO_REUSEADDR so a restarted prefill can take its port back."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def encode(reply: Reply, path: str = "") -> web.Response:
    headers = {"Allow": ", ".join(sorted(ROUTES[path]))} if reply.status == 405 else None
    if isinstance(reply.body, str):
        return web.Response(status=reply.status, text=reply.body, headers=headers)
    return web.json_response(reply.body, status=reply.status, headers=headers)


def _closing(status: int, text: str) -> web.Response:
    response = web.Response(status=status, text=text)
    response.force_close()
    return response


class BootstrapServerBase:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        cleanup_interval: float = 120.0,  # SGLANG_DISAGGREGATION_BOOTSTRAP_ENTRY_CLEANUP_INTERVAL
        entry_ttl: float = 120.0,
        max_body: int = MAX_BODY,
        read_timeout: float = READ_TIMEOUT,  # request head, body, idle keep-alive
        max_rooms: int = MAX_ROOMS,  # room_to_dp_rank entries; the oldest go first
        now: Callable[[], float] = time.monotonic,
        cleanup_ticks: Ticks | None = None,  # None: SleepTicks(cleanup_interval), as upstream
        loop: asyncio.AbstractEventLoop | None = None,
        listen: bool = True,
    ) -> None:
        self.host, self.requested_port = host, port
        self.cleanup_interval, self.entry_ttl, self.max_body = cleanup_interval, entry_ttl, max_body
        self.read_timeout = read_timeout
        self.cleanup_ticks = cleanup_ticks or SleepTicks(cleanup_interval)
        self.listen = listen
        self.table = BootstrapTable(now, max_rooms=max_rooms)
        self.cleanup_rounds = 0
        self._sock: socket.socket | None = None
        self._port: int | None = None
        self._given_loop = loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._startup_error: BaseException | None = None

    # -- the HTTP layer ----------------------------------------------------------------
    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(self.read_timeout):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text=f"body over the {self.max_body}-byte limit")
        except TimeoutError:
            return _closing(408, f"body not received within {self.read_timeout} s")
        except Exception as exc:  # the client went away mid-body, or a bad chunked encoding
            return _closing(400, f"body unreadable ({type(exc).__name__})")
        try:
            reply = self.table.handle(request.method, request.path, request.query, body)
        except Exception as exc:  # a gap in validation must not become a 500
            reply = Reply(400, f"bad request ({type(exc).__name__})")
        return encode(reply, request.path)

    # -- the background task -------------------------------------------------------------
    async def _cleanup_expired_entries(self) -> None:
        while True:
            await self.cleanup_ticks.next_tick()
            self.table.expire(self.entry_ttl)
            self.cleanup_rounds += 1

    def _start_background_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        raise NotImplementedError("a variant provides _start_background_tasks")

    # -- thread and loop -------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("bootstrap server not started, or started with listen=False")
        return self._port

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> BootstrapServerBase:
        if self.listen:
            self._sock = listen_socket(self.host, self.requested_port)
            self._port = int(self._sock.getsockname()[1])
        self._loop = self._given_loop or asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_server, name="bootstrap-server", daemon=True)
        self._thread.start()
        if not self._started.wait(START_TIMEOUT):
            self.close()
            raise RuntimeError(f"bootstrap server did not start within {START_TIMEOUT} s")
        if self._startup_error is not None:
            self.close()
            raise RuntimeError(f"bootstrap server failed to start: {self._startup_error}")
        return self

    def _run_server(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(self.make_app(), access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
        listening: asyncio.Server | None = None
        try:
            self._start_background_tasks(loop)
            if self._sock is not None:
                loop.run_until_complete(runner.setup())
                listening = loop.run_until_complete(serve(runner, self._sock, self.read_timeout))
        except Exception as exc:
            self._startup_error = exc
        self._started.set()
        try:
            if self._startup_error is None:
                loop.run_forever()
        finally:
            if listening is not None:
                listening.close()  # stop accepting; the runner's cleanup closes the connections
            loop.run_until_complete(runner.cleanup())
            _cancel_pending(loop)
            loop.close()

    def close(self, timeout: float = 2.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> BootstrapServerBase:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
