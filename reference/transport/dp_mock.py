"""In-process DP encoder workers: the mock transport for the DP dispatcher.

Each rank answers a request at once (the reply is queued for the dispatcher's result
listener, as a PULL socket would deliver it), unless it was told to stall. A killed
rank drops what it held, loses every later request, and its exit is posted to the
`ExitNotices` board on the next loop iteration, as a process sentinel would become
readable. No sockets, no threads, no wall time.
"""

from __future__ import annotations

import asyncio

from reference.transport.base import TransportError
from reference.transport.dp_base import ExitNotices, Message, answer


class MockWorkerPool:
    def __init__(self, size: int = 2, *, hold_exit_waiters: bool = True) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one rank")
        self.size = size
        self.exits = ExitNotices(hold_exit_waiters)
        self._replies: asyncio.Queue[Message] | None = None
        self._dead: set[int] = set()
        self._stalled: set[int] = set()
        self.held: dict[int, list[Message]] = {rank: [] for rank in range(size)}
        self.lost: dict[int, list[Message]] = {rank: [] for rank in range(size)}
        self.recv_errors = 0  # the next N receives fail, as a corrupt frame would

    async def start(self) -> None:
        self._replies = asyncio.Queue()

    def _queue(self) -> asyncio.Queue[Message]:
        if self._replies is None:
            raise TransportError("worker pool not started")
        return self._replies

    async def send(self, rank: int, message: Message) -> None:
        if rank in self._dead:
            self.lost[rank].append(message)
        elif rank in self._stalled:
            self.held[rank].append(message)
        else:
            reply = answer(rank, message)
            if reply is not None:
                self._queue().put_nowait(reply)

    async def recv(self) -> Message:
        if self.recv_errors > 0:
            self.recv_errors -= 1
            raise TransportError("could not decode a reply frame")
        return await self._queue().get()

    def is_alive(self, rank: int) -> bool:
        return rank not in self._dead

    async def stall(self, rank: int) -> None:
        self._stalled.add(rank)

    async def kill(self, rank: int) -> None:
        if rank in self._dead:
            return
        self._dead.add(rank)
        self.held[rank].clear()
        asyncio.get_running_loop().call_soon(self.exits.post, rank)

    async def close(self) -> None:
        self._dead.update(range(self.size))
