"""`DPDispatcher` for lesson `task-refs`, built on upstream's own `DPDispatcher`.

The class is made per loaded version: `DPDispatcher(DispatcherAdapter, <upstream DPDispatcher>)`,
found by name (`encode_server.py` up to 0.5.18, `encoder/runtime.py` from 0.5.19; not
present before 0.5.13).

Upstream code (run unchanged, from the wheel or tree): `__init__`, `start()` (the three
`create_task` lines PR #33048 changed), `dispatch` (least-pending routing, the request
timeout), `_result_listener`, `_worker_watchdog` (`loop.add_reader` on each worker's
sentinel), `_cleanup_stale_mappings`, `_fail_pending_for_rank`, `alive_ranks`,
`all_ranks_alive`.

Adapter code (this file), where the encoder's processes and IPC sockets would be:
- the constructor signature `(workers, config)`: upstream's takes the per-rank PUSH
  sockets, the shared PULL socket and the worker processes. The adapter passes
  `RankSocket`s and a `ResultSocket` over the scenario's worker pool, and for each rank
  a `WorkerSentinel`: an OS pipe whose read end is the "process sentinel" upstream's
  watchdog registers with `loop.add_reader`, written the moment the pool posts that
  worker's exit (nothing reads the pool's exit board: upstream watches sentinels).
  Upstream's own waits are thus what they are upstream: a selector reader per
  sentinel, a socket read, a timer;
- upstream's file-level `async_sock_send`, `async_sock_recv` and `wrap_as_pickle`
  (sglang's `io_struct` helpers) call the sockets above; `ENCODER_REQ_TIMEOUT` is the
  scenario's `req_timeout` (upstream reads it from the environment at import);
- `dispatch(payload, req_id)` wraps upstream's `dispatch(request)`: the request dict
  upstream's workers get, and the reply envelope (`content`, `_error`, `_error_code`,
  or upstream's `MMError` for "all workers dead") as the scenario's `Reply`;
- `dead_ranks`, `mappings_to`, `loop_tasks()` read upstream's fields; `close()` cancels
  what is still running (upstream's lifespan ends with the process).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import os
from types import ModuleType
from typing import Any

from reference.common.dispatcher import Reply
from reference.config import DispatcherConfig

LOOPS = ("_result_listener", "_worker_watchdog", "_cleanup_stale_mappings")
_ids = itertools.count(1)


class RankSocket:
    """One rank's dispatch PUSH socket: hands the request to the pool."""

    def __init__(self, pool: Any, rank: int) -> None:
        self.pool, self.rank = pool, rank

    async def send(self, message: dict) -> None:
        await self.pool.send(self.rank, message)


class ResultSocket:
    """The shared result PULL socket: the pool's next reply."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def recv(self) -> dict:
        return dict(await self.pool.recv())


class WorkerSentinel:
    """A worker process as upstream's watchdog sees it: `sentinel` becomes readable when
    the worker exits (an OS pipe the adapter's bridge writes to), `pid`, `exitcode`."""

    def __init__(self, rank: int) -> None:
        self.rank, self.pid = rank, 0
        self.exitcode: int | None = None
        self.sentinel, self._write = os.pipe()

    def exited(self) -> None:
        if self.exitcode is None:
            self.exitcode = -9
            os.write(self._write, b"x")
            # The selector sees the pipe on its next poll: one more ready callback keeps
            # the scenario's `settle()` from stopping before that poll.
            asyncio.get_running_loop().call_soon(_nothing)

    def close(self) -> None:
        for fd in (self.sentinel, self._write):
            os.close(fd)


def _on_exit_post(board: Any, sentinels: list[WorkerSentinel]) -> None:
    """When the pool posts a worker's exit, that worker's sentinel becomes readable at
    once, as a process sentinel does when the process ends."""
    post = board.post

    def post_and_signal(rank: int) -> None:
        post(rank)
        sentinels[rank].exited()

    board.post = post_and_signal


def _nothing() -> None:
    """A ready callback that does nothing (see `WorkerSentinel.exited`)."""


async def _sock_send(sock: Any, obj: Any) -> None:
    await sock.send(obj)


async def _sock_recv(sock: Any) -> Any:
    return await sock.recv()


class DispatcherAdapter:
    """Mixin placed before upstream's `DPDispatcher` in the MRO (see the module doc)."""

    _upstream: ModuleType  # the loaded file that defines DPDispatcher
    req_id_to_rank: dict[str, int]
    _dead_ranks: set[int]

    def __init__(self, workers: Any, config: DispatcherConfig | None = None) -> None:
        self.workers, self.config = workers, config or DispatcherConfig()
        self._upstream.ENCODER_REQ_TIMEOUT = self.config.req_timeout  # type: ignore[attr-defined]
        self.sentinels = [WorkerSentinel(rank) for rank in range(workers.size)]
        _on_exit_post(workers.exits, self.sentinels)
        sockets = [RankSocket(workers, rank) for rank in range(workers.size)]
        offered = {
            "dp_size": workers.size,
            "dispatch_sockets": sockets,
            "release_sockets": sockets,  # 0.5.23: a second PUSH socket per rank
            "result_socket": ResultSocket(workers),
            "worker_processes": self.sentinels,
        }
        wanted = inspect.signature(super().__init__).parameters  # type: ignore[misc]
        super().__init__(**{k: v for k, v in offered.items() if k in wanted})  # type: ignore[call-arg]

    async def dispatch(self, payload: str, req_id: str | None = None) -> Reply:
        request = {"req_id": req_id or f"req-{next(_ids)}", "kind": "encode", "payload": payload}
        try:
            reply = await super().dispatch(request)  # type: ignore[misc]
        except Exception as exc:  # upstream's MMError: every worker is dead
            return Reply(int(getattr(exc, "code", 503)), error=str(exc))
        code = int(reply.get("_error_code") or reply.get("code") or (500 if reply.get("_error") else 200))
        error = str(reply.get("_error") or reply.get("error") or "")
        return Reply(
            code, reply.get("content"), error, reply.get("rank", self.req_id_to_rank.get(request["req_id"]))
        )

    @property
    def dead_ranks(self) -> frozenset[int]:
        return frozenset(self._dead_ranks)

    def mappings_to(self, rank: int) -> int:
        return sum(1 for r in self.req_id_to_rank.values() if r == rank)

    def loop_tasks(self) -> dict[str, asyncio.Task]:
        """Upstream's background loops still alive, by coroutine name (the loop's own
        weak task set: a collected task is not there)."""
        tasks = asyncio.all_tasks()
        return {name: t for t in tasks if (name := getattr(t.get_coro(), "__name__", "")) in LOOPS}

    async def close(self) -> None:
        tasks = list(self.loop_tasks().values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sentinel in self.sentinels:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(sentinel.sentinel)
            sentinel.close()


def _install_io(module: ModuleType) -> None:
    """sglang's io_struct helpers, as the loaded file calls them, on the adapter's sockets."""
    module.async_sock_send = _sock_send  # type: ignore[attr-defined]
    module.async_sock_recv = _sock_recv  # type: ignore[attr-defined]
    module.wrap_as_pickle = lambda obj: obj  # type: ignore[attr-defined]


def dispatcher_class(upstream: type, module: ModuleType, label: str) -> type:
    """The scenarios' `DPDispatcher` for one loaded version's upstream `DPDispatcher`."""
    _install_io(module)
    return type(
        "DPDispatcher",
        (DispatcherAdapter, upstream),
        {
            "_upstream": module,
            "__module__": f"reference.upstream[{label}]",
            "__doc__": f"Upstream {label} DPDispatcher, driven by {__name__}.",
        },
    )
