"""What the DP dispatcher talks to: a pool of encoder worker ranks.

Upstream's multimodal encoder server, with dp_size > 1, runs one worker process per GPU.
The main process PUSHes each request to a rank and PULLs every reply from one shared
socket; replies carry the request id. When a worker process exits, the dispatcher's
watchdog hears of it (upstream: `loop.add_reader` on the process sentinel).

A `WorkerPool` is that arrangement behind one interface, so the dispatcher runs
unchanged on in-process workers (`dp_mock`) and on worker processes over ZMQ on
127.0.0.1 (`dp_zmq`). Both answer requests with `answer()`, the worker's logic minus
the GPU, and both post worker exits to an `ExitNotices` board the watchdog reads.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import MutableSet
from typing import Any, Protocol

Message = dict[str, Any]


def answer(rank: int, request: Message) -> Message | None:
    """A worker's reply to one request: encode, or hand the result over (`/send`)."""
    kind, req_id = request.get("kind"), request.get("req_id")
    if kind == "encode":
        payload = str(request.get("payload", ""))
        if payload == "fail":
            return {"req_id": req_id, "kind": kind, "rank": rank, "error": "encoder raised", "code": 500}
        return {"req_id": req_id, "kind": kind, "rank": rank, "content": f"embedding[{payload}]"}
    if kind == "send":
        return {"req_id": req_id, "kind": kind, "rank": rank, "content": "sent"}
    return None


class ExitNotices:
    """Worker exits, posted by a pool and read by the dispatcher's watchdog.

    `hold_waiters=True` (the default, and upstream's situation): the board keeps a
    waiting reader alive, just as the loop keeps upstream's watchdog alive through the
    `add_reader` callbacks it registered on the sentinels. A bare watchdog task is then
    never collectable and the task-refs bug stays latent.

    `hold_waiters=False`: waiters are held weakly, as an event bus does so that a
    subscriber that went away needs no unsubscribe. A waiting watchdog is then parked
    on an `asyncio.Event` that only its own frame references: exactly the awaitable
    that leaves a bare task collectable (`reference/lessons/task_refs/collectable.py`
    measures which awaitables do). Lesson `task-refs` uses
    this configuration to make the upstream fix observable.
    """

    def __init__(self, hold_waiters: bool = True) -> None:
        self.hold_waiters = hold_waiters
        self._unread: list[int] = []
        self._waiters: MutableSet[asyncio.Event] = set() if hold_waiters else weakref.WeakSet()
        self.posted = 0
        self._error: BaseException | None = None

    @property
    def unread(self) -> int:
        """Exits posted that no watchdog has read (yet)."""
        return len(self._unread)

    def post(self, rank: int) -> None:
        self.posted += 1
        self._unread.append(rank)
        for waiter in list(self._waiters):
            waiter.set()

    def fail(self, error: BaseException) -> None:
        """The pool's exit reader broke: the next `next()` raises `error` once (a fault to inject)."""
        self._error = error
        for waiter in list(self._waiters):
            waiter.set()

    async def next(self) -> int:
        """Wait for the next worker exit and return its rank."""
        while not self._unread:
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            waiter = asyncio.Event()
            self._waiters.add(waiter)
            try:
                await waiter.wait()
            finally:
                self._waiters.discard(waiter)
        return self._unread.pop(0)


class WorkerPool(Protocol):
    size: int
    exits: ExitNotices

    async def start(self) -> None: ...

    async def send(self, rank: int, message: Message) -> None:
        """Hand a request to a rank (a dead rank's requests are lost, as on a socket)."""
        ...

    async def recv(self) -> Message:
        """The next reply from any rank."""
        ...

    def is_alive(self, rank: int) -> bool:
        """The truth about a worker, for scenarios (the dispatcher must find out itself)."""
        ...

    async def stall(self, rank: int) -> None:
        """The worker keeps taking requests and never answers (a wedged encoder)."""
        ...

    async def kill(self, rank: int) -> None:
        """The worker exits; returns once the exit is observable (process reaped)."""
        ...

    async def close(self) -> None: ...
