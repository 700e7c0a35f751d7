"""DP encoder workers as separate processes over ZMQ on 127.0.0.1 (the loopback transport).

As upstream, the dispatcher side binds one async PULL socket for every rank's replies
and one PUSH socket per rank; worker processes (`python -m reference.transport.dp_worker`)
connect the other ends. Upstream binds `ipc:///tmp/<uuid>_dp_*`; we bind
`tcp://127.0.0.1` on random ports, which leaves no files behind. Payloads are JSON
dicts keyed by `req_id`.

Worker exits are noticed the way upstream's watchdog notices them: `loop.add_reader` on
each process sentinel, which becomes readable when the process is gone. The reader
callback posts the exit to the pool's `ExitNotices`. Note that the loop holds that
callback, and so the pool, strongly: that is why nothing a watchdog awaits through a
sentinel reader is ever collectable (see `ExitNotices` for the configuration that is).

Decision: upstream spawns workers with multiprocessing; we start them with `subprocess`
and make the sentinel ourselves, as multiprocessing does: a pipe whose only write end
the worker inherits, so the read end reaches EOF exactly when the worker is gone. This
avoids multiprocessing's resource-tracker process (which outlives every pool) and its
re-import of the parent's `__main__`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import zmq
import zmq.asyncio

import reference
from reference.transport.base import TransportError
from reference.transport.dp_base import ExitNotices, Message

HOST = "tcp://127.0.0.1"
START_BOUND = 60.0  # real seconds for every spawned worker to report ready (slow CI)
READY_POLL = 0.25  # real seconds between checks that no worker died while starting
STOP_BOUND = 5.0  # real seconds for a worker to exit after stop or SIGKILL


class ZmqWorkerPool:
    def __init__(self, size: int = 2, *, hold_exit_waiters: bool = True) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one rank")
        self.size = size
        self.exits = ExitNotices(hold_exit_waiters)
        self._ctx = zmq.asyncio.Context()
        self._results = self._ctx.socket(zmq.PULL)
        self._dispatch = [self._ctx.socket(zmq.PUSH) for _ in range(size)]
        self._procs: list[subprocess.Popen[bytes]] = []
        self._sentinels: list[int] = []
        self._watched: set[int] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        result_endpoint = f"{HOST}:{self._results.bind_to_random_port(HOST)}"
        for rank, sock in enumerate(self._dispatch):
            sock.setsockopt(zmq.LINGER, 0)
            self._spawn(rank, f"{HOST}:{sock.bind_to_random_port(HOST)}", result_endpoint)
        await self._await_ready()
        for rank, sentinel in enumerate(self._sentinels):
            self._loop.add_reader(sentinel, self._on_exit, rank)
            self._watched.add(rank)

    def _spawn(self, rank: int, dispatch_endpoint: str, result_endpoint: str) -> None:
        sentinel, keep_open = os.pipe()
        command = [sys.executable, "-m", "reference.transport.dp_worker"]
        args = [str(rank), dispatch_endpoint, result_endpoint, str(keep_open)]
        try:
            self._procs.append(subprocess.Popen([*command, *args], pass_fds=(keep_open,), env=_child_env()))
        except BaseException:
            os.close(sentinel)
            raise
        finally:
            os.close(keep_open)
        self._sentinels.append(sentinel)

    async def _await_ready(self) -> None:
        ready: set[int] = set()
        deadline = asyncio.get_running_loop().time() + START_BOUND
        while len(ready) < self.size:
            exited = [(rank, p.returncode) for rank, p in enumerate(self._procs) if p.poll() is not None]
            if exited:
                raise TransportError(f"DP worker {exited[0][0]} exited at start (code {exited[0][1]})")
            if asyncio.get_running_loop().time() > deadline:
                raise TransportError(f"only {len(ready)} of {self.size} DP workers started")
            try:
                message = await asyncio.wait_for(self.recv(), READY_POLL)
            except TimeoutError:
                continue
            if message.get("kind") == "ready":
                ready.add(int(message["rank"]))

    def _on_exit(self, rank: int) -> None:
        self._unwatch(rank)
        self.exits.post(rank)

    def _unwatch(self, rank: int) -> None:
        if rank in self._watched and self._loop is not None:
            self._loop.remove_reader(self._sentinels[rank])
            self._watched.discard(rank)

    async def send(self, rank: int, message: Message) -> None:
        await self._dispatch[rank].send(json.dumps(message).encode())

    async def recv(self) -> Message:
        frame = await self._results.recv()
        try:
            message = json.loads(frame)
        except ValueError as exc:
            raise TransportError(f"undecodable reply frame: {exc}") from None
        if not isinstance(message, dict):
            raise TransportError("reply frame is not a JSON object")
        return message

    def is_alive(self, rank: int) -> bool:
        return self._procs[rank].poll() is None

    async def stall(self, rank: int) -> None:
        await self.send(rank, {"kind": "stall"})

    async def kill(self, rank: int) -> None:
        proc = self._procs[rank]
        proc.kill()
        proc.wait(STOP_BOUND)

    async def close(self) -> None:
        for rank in list(self._watched):
            self._unwatch(rank)
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(STOP_BOUND)
        for sentinel in self._sentinels:
            os.close(sentinel)
        self._sentinels.clear()
        for sock in (self._results, *self._dispatch):
            sock.close(linger=0)
        self._ctx.term()


def _child_env() -> dict[str, str]:
    """The worker imports the same `reference` package as we do, whatever its cwd."""
    package_root = str(Path(reference.__file__).resolve().parents[1])
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, inherited]))}
