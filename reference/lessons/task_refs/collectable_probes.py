"""The parked coroutines behind the collectability table (`collectable.py`).

Each one parks on one kind of await. Resources the table needs to undo afterwards are
kept outside the task only where they do not lead back to it (a zmq Context holds its
sockets weakly, a listening socket knows nothing of its client, a `threading.Event` is
not an asyncio object); everything that would wake the task is created inside it, so
that whatever keeps it alive is the loop's doing, not ours.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import aiohttp
import zmq
import zmq.asyncio
from aiohttp import web

from reference.aioloop import JumpLoop

HOUR = 3600.0
BOUND = 10.0  # real seconds for any socket step of a probe


async def _settle(loop: JumpLoop) -> None:
    await loop.settle()


async def _nothing_to_clean() -> str:
    return ""


@dataclass(frozen=True)
class Parked:
    """How to park one task and undo it. `park` makes the coroutine the task runs."""

    park: Callable[[], Coroutine[Any, Any, None]]
    ready: Callable[[JumpLoop], Awaitable[None]] = _settle
    cleanup: Callable[[], Awaitable[str]] = _nothing_to_clean


def simple(park: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], Parked]:
    return lambda: Parked(park)


async def own_future() -> None:
    await asyncio.get_running_loop().create_future()


async def own_event() -> None:
    await asyncio.Event().wait()


async def gather_own() -> None:
    loop = asyncio.get_running_loop()
    await asyncio.gather(loop.create_future(), loop.create_future())


async def sleep() -> None:
    await asyncio.sleep(HOUR)


async def wait_for() -> None:
    await asyncio.wait_for(asyncio.get_running_loop().create_future(), HOUR)


def zmq_recv() -> Parked:
    ctx = zmq.asyncio.Context()

    async def park() -> None:
        sock = ctx.socket(zmq.PULL)
        try:
            sock.bind_to_random_port("tcp://127.0.0.1")
            await sock.recv()
        finally:
            sock.close(linger=0)

    async def cleanup() -> str:
        ctx.term()
        return ""

    return Parked(park, cleanup=cleanup)


def aiohttp_read() -> Parked:
    """A client GET to a listener that takes the request and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []

    async def park() -> None:
        async with aiohttp.ClientSession() as session:
            await session.get(f"http://127.0.0.1:{port}/never")

    async def ready(loop: JumpLoop) -> None:
        conn, _ = await asyncio.wait_for(loop.sock_accept(listener), BOUND)
        accepted.append(conn)
        await asyncio.wait_for(loop.sock_recv(conn, 65536), BOUND)
        await loop.settle()

    async def cleanup() -> str:
        for sock in (*accepted, listener):
            sock.close()
        return ""

    return Parked(park, ready, cleanup)


def aiohttp_runner() -> Parked:
    """A server started in the task, which then parks on its own Event (cleanup lost)."""
    runners: list[web.AppRunner] = []  # the runner does not lead back to the task

    async def park() -> None:
        app = web.Application()
        app.router.add_get("/health", _ok)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        await asyncio.Event().wait()

    async def ready(loop: JumpLoop) -> None:
        await loop.settle()
        if not runners:
            raise RuntimeError("the aiohttp probe never started its server")

    async def cleanup() -> str:
        (runner,) = runners
        port = runner.addresses[0][1]
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/health") as resp:
            status = resp.status
        await runner.cleanup()
        return f"its server still answered /health with {status}"

    return Parked(park, ready, cleanup)


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(text="OK")


def executor_call() -> Parked:
    release = threading.Event()

    async def park() -> None:
        executor = ThreadPoolExecutor(1, thread_name_prefix="probe")
        try:
            await asyncio.get_running_loop().run_in_executor(executor, release.wait, BOUND)
        finally:
            release.set()
            executor.shutdown(wait=True)

    async def cleanup() -> str:
        release.set()
        return ""

    return Parked(park, cleanup=cleanup)
