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
  sockets, the shared PULL socket and the worker processes. The sockets are real
  `zmq.asyncio` sockets on inproc endpoints (`Sockets`): upstream's dispatch sends on a
  rank's PUSH, its result listener awaits the result PULL, so what those loops await is
  pyzmq's own future, held by the socket whose reader the loop's selector holds. The
  workers' ends are bridged to the scenario's pool by adapter tasks (started with the
  dispatcher, held by the adapter, cancelled by `close()`); a reply the pool cannot
  decode arrives as a frame upstream's `recv_pyobj` rejects. For each rank a
  `WorkerSentinel`: an OS pipe whose read end is the "process sentinel" upstream's
  watchdog registers with `loop.add_reader`, written the moment the pool posts that
  worker's exit (nothing reads the pool's exit board: upstream watches sentinels).
  Upstream's own waits are thus what they are upstream: a selector reader per
  sentinel, a socket read, a timer. A broken exit reader (the pool's
  `exits.fail(error)`, lesson `supervised-loops`) reaches upstream's watchdog where it
  reads a worker's exit: the next `exitcode` read of any sentinel raises `error`, once;
- upstream's file-level `async_sock_send`, `async_sock_recv` and `wrap_as_pickle`
  (sglang's `io_struct` helpers, outside the package) are their pickle path
  (`send_pyobj`, `recv_pyobj`, no wrapping) on those sockets; `ENCODER_REQ_TIMEOUT` is
  the scenario's `req_timeout`, set on the module upstream's dispatch reads it from
  (the file itself up to 0.5.18, `encoder/server.py` from 0.5.19); its
  `time.monotonic()` is the running loop's clock; its `asyncio.sleep` is held by the
  adapter as the real loop's timer heap holds it (`HeldSleepAsyncio`), except under the
  task-refs trigger: a check's `WeakTimerLoop` holds sleeping futures weakly;
- `dispatch(payload, req_id)` wraps upstream's `dispatch(request)`: the request dict
  upstream's workers get, and the reply envelope (`content`, `_error`, `_error_code`,
  or upstream's `MMError` for "all workers dead") as the scenario's `Reply`; any other
  exception from upstream's code is raised as `UpstreamRaised`, naming the upstream
  line it came from (never mapped to a reply);
- `dead_ranks`, `mappings_to`, `loop_tasks()` read upstream's fields; `close()` cancels
  what is still running (upstream's lifespan ends with the process).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import os
import pickle
import time
from types import ModuleType
from typing import Any

import zmq
import zmq.asyncio

from reference.common.dispatcher import Reply
from reference.config import DispatcherConfig
from reference.transport.base import TransportError
from reference.upstream.bound import LoopTimeLike

LOOPS = ("_result_listener", "_worker_watchdog", "_cleanup_stale_mappings")
_ids = itertools.count(1)
_socket_ids = itertools.count(1)


class Sockets:
    """The encoder's IPC sockets, real `zmq.asyncio` sockets on inproc endpoints: per rank
    a PUSH (upstream's `dispatch_sockets[rank]`) to that worker's PULL, and the shared
    result PULL (upstream's `result_socket`) fed by the workers' PUSH. What upstream's
    loops await on them is pyzmq's own future, held by the socket, whose reader the
    loop's selector holds. The worker ends are bridged to the scenario's pool by adapter
    tasks (`bridge`), which the adapter holds and `close()` cancels."""

    def __init__(self, pool: Any, size: int) -> None:
        self.pool, self.ctx = pool, zmq.asyncio.Context()
        name = f"inproc://upstream-dp-{next(_socket_ids)}"
        self.dispatch, self.worker_ends = [], []
        for rank in range(size):
            self.worker_ends.append(self._socket(zmq.PULL, bind=f"{name}-rank-{rank}"))
            self.dispatch.append(self._socket(zmq.PUSH, connect=f"{name}-rank-{rank}"))
        self.result = self._socket(zmq.PULL, bind=f"{name}-results")
        self.reply_end = self._socket(zmq.PUSH, connect=f"{name}-results")
        self.go = asyncio.Event()
        self.tasks: list[asyncio.Task] = []

    def _socket(self, kind: int, bind: str = "", connect: str = "") -> zmq.asyncio.Socket:
        sock = self.ctx.socket(kind, socket_class=_SeenSocket)
        sock.setsockopt(zmq.LINGER, 0)
        if bind:
            sock.bind(bind)
        else:
            sock.connect(connect)
        return sock

    def bridge(self) -> None:
        """Start the bridges (they wait for `go`: the pool is started by then)."""
        if self.tasks:
            return
        self.tasks = [
            asyncio.ensure_future(self._to_worker(rank, sock)) for rank, sock in enumerate(self.worker_ends)
        ]
        self.tasks.append(asyncio.ensure_future(self._from_workers()))

    async def _to_worker(self, rank: int, sock: zmq.asyncio.Socket) -> None:
        await self.go.wait()
        while True:
            message = await sock.recv_pyobj()
            await self.pool.send(rank, message)

    async def _from_workers(self) -> None:
        await self.go.wait()
        while True:
            try:
                frame = pickle.dumps(dict(await self.pool.recv()))
            except TransportError:
                frame = CORRUPT  # the pool's undecodable reply, as a frame upstream's recv_pyobj rejects
            await self.reply_end.send(frame)

    async def close(self) -> None:
        tasks, self.tasks = self.tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock in (*self.dispatch, *self.worker_ends, self.result, self.reply_end):
            sock.close(linger=0)
        self.ctx.term()


class _SeenSocket(zmq.asyncio.Socket):
    """A `zmq.asyncio.Socket` that, after each send, keeps the scenario's `settle()` running
    until the selector has polled the peer's fd (`_selector_sees_it`); nothing else."""

    def send(self, *args: Any, **kwargs: Any) -> Any:
        sent = super().send(*args, **kwargs)
        _selector_sees_it()
        return sent


CORRUPT = b"\x00 not a pickle"  # pickle.loads raises UnpicklingError


def _selector_sees_it() -> None:
    """A frame sent on an inproc socket makes its peer's fd readable at once; the
    selector sees it on its next poll: one more ready callback keeps the scenario's
    `settle()` from stopping before that poll."""
    asyncio.get_running_loop().call_soon(_nothing)


class ExitFault:
    """The pool's broken exit reader (`exits.fail(error)`), as upstream's watchdog meets
    it: raised once, by the next read of a worker's exit code."""

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def raise_once(self) -> None:
        error, self.error = self.error, None
        if error is not None:
            raise error


class WorkerSentinel:
    """A worker process as upstream's watchdog sees it: `sentinel` becomes readable when
    the worker exits (an OS pipe the adapter's bridge writes to), `pid`, `exitcode`."""

    def __init__(self, rank: int, fault: ExitFault) -> None:
        self.rank, self.pid, self.fault = rank, 0, fault
        self._exitcode: int | None = None
        self.sentinel, self._write = os.pipe()
        self.closed = False

    @property
    def exitcode(self) -> int | None:
        self.fault.raise_once()
        return self._exitcode

    def exited(self) -> None:
        if self._exitcode is None and not self.closed:
            self._exitcode = -9
            os.write(self._write, b"x")
            # The selector sees the pipe on its next poll: one more ready callback keeps
            # the scenario's `settle()` from stopping before that poll.
            asyncio.get_running_loop().call_soon(_nothing)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for fd in (self.sentinel, self._write):
                os.close(fd)


def _bridge_exits(board: Any, sentinels: list[WorkerSentinel], fault: ExitFault) -> None:
    """When the pool posts a worker's exit, that worker's sentinel becomes readable at
    once, as a process sentinel does when the process ends; when the pool's exit reader
    breaks, the next exit code read raises."""
    post, fail = board.post, board.fail

    def post_and_signal(rank: int) -> None:
        post(rank)
        sentinels[rank].exited()

    def fail_and_arm(error: BaseException) -> None:
        fail(error)
        fault.error = error

    board.post, board.fail = post_and_signal, fail_and_arm


def _nothing() -> None:
    """A ready callback that does nothing (see `WorkerSentinel.exited`)."""


async def _sock_send(sock: zmq.asyncio.Socket, obj: Any) -> None:
    """sglang's `io_struct.async_sock_send` (its pickle path): on the real socket."""
    await sock.send_pyobj(obj, protocol=pickle.HIGHEST_PROTOCOL)


async def _sock_recv(sock: zmq.asyncio.Socket) -> Any:
    """sglang's `io_struct.async_sock_recv` (its pickle path): on the real socket."""
    return await sock.recv_pyobj()


class DispatcherAdapter:
    """Mixin placed before upstream's `DPDispatcher` in the MRO (see the module doc)."""

    _upstream: ModuleType  # the loaded file that defines DPDispatcher
    _triggers: Any  # wiring.Triggers of this loaded version
    req_id_to_rank: dict[str, int]
    _dead_ranks: set[int]

    def __init__(self, workers: Any, config: DispatcherConfig | None = None) -> None:
        self.workers, self.config = workers, config or DispatcherConfig()
        _timeout_module(self._upstream).ENCODER_REQ_TIMEOUT = self.config.req_timeout  # type: ignore[attr-defined]
        fault = ExitFault()
        self.sentinels = [WorkerSentinel(rank, fault) for rank in range(workers.size)]
        _bridge_exits(workers.exits, self.sentinels, fault)
        self.sockets = Sockets(workers, workers.size)
        with contextlib.suppress(RuntimeError):  # no running loop: the bridges start in start()
            asyncio.get_running_loop()
            self.sockets.bridge()
        offered = {
            "dp_size": workers.size,
            "dispatch_sockets": self.sockets.dispatch,
            "release_sockets": self.sockets.dispatch,  # 0.5.23: a second PUSH socket per rank
            "result_socket": self.sockets.result,
            "worker_processes": self.sentinels,
        }
        wanted = inspect.signature(super().__init__).parameters  # type: ignore[misc]
        super().__init__(**{k: v for k, v in offered.items() if k in wanted})  # type: ignore[call-arg]

    def start(self) -> None:
        self.sockets.bridge()
        self.sockets.go.set()
        super().start()  # type: ignore[misc]

    async def dispatch(self, payload: str, req_id: str | None = None) -> Reply:
        request = {"req_id": req_id or f"req-{next(_ids)}", "kind": "encode", "payload": payload}
        try:
            reply = await super().dispatch(request)  # type: ignore[misc]
        except Exception as exc:
            if type(exc).__name__ != "MMError":  # upstream's "every worker is dead" is a reply
                raise UpstreamRaised.of(exc) from exc
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
        found = {}
        for task in asyncio.all_tasks():
            coro: Any = task.get_coro()
            frame = getattr(coro, "cr_frame", None)
            mine = frame is not None and frame.f_locals.get("self") is self
            if mine and getattr(coro, "__name__", "") in LOOPS:
                found[coro.__name__] = task
        return found

    async def close(self) -> None:
        tasks = list(self.loop_tasks().values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.sockets.close()
        for sentinel in self.sentinels:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(sentinel.sentinel)
            sentinel.close()


class LoopTime(LoopTimeLike):
    """`time` for the dispatcher's file: `monotonic()` is the running loop's clock (the
    scenario's `JumpLoop`, whose jumps then reach upstream's stale-mapping sweep)."""

    def monotonic(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class HeldSleepAsyncio(LoopTimeLike):
    """`asyncio` for the dispatcher's file: `sleep` is held by this object as the real
    loop's timer heap holds a sleeping future, whatever loop the scenario runs (a check
    may run a loop whose timers hold futures weakly); only while the task-refs trigger
    is on is it the loop's own sleep. Everything else is the real module."""

    def __init__(self, triggers: Any) -> None:
        self.triggers = triggers
        self._held: set[asyncio.Future] = set()

    async def sleep(self, delay: float, result: Any = None) -> Any:
        if self.triggers.active("task-refs") or delay <= 0:
            return await asyncio.sleep(delay, result)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        handle = loop.call_later(delay, _wake, future, result)
        self._held.add(future)
        try:
            return await future
        finally:
            self._held.discard(future)
            handle.cancel()

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)


def _wake(future: asyncio.Future, result: Any) -> None:
    if not future.done():
        future.set_result(result)


class UpstreamRaised(Exception):
    """An exception upstream's own code raised, named with the upstream line it came from."""

    @classmethod
    def of(cls, exc: BaseException) -> UpstreamRaised:
        where, tb = "", exc.__traceback__
        while tb is not None:  # the innermost frame from the wheel or tree
            code = tb.tb_frame.f_code
            if code.co_filename.startswith("<sglang-"):
                file = code.co_filename.partition(">/")[2].removeprefix("sglang/srt/disaggregation/")
                where = f" in {code.co_qualname} ({file}:{tb.tb_lineno})"
            tb = tb.tb_next
        return cls(f"upstream raised {type(exc).__name__}{where}: {exc}")


def _timeout_module(module: ModuleType) -> ModuleType:
    """The module whose `ENCODER_REQ_TIMEOUT` upstream's dispatch reads: the file itself up to
    0.5.18, `encoder/server.py` (imported as `server_module`) from 0.5.19."""
    server = getattr(module, "server_module", None)
    return server if server is not None and hasattr(server, "ENCODER_REQ_TIMEOUT") else module


def _install_io(module: ModuleType, triggers: Any) -> None:
    """sglang's io_struct helpers, as the loaded file calls them, on the adapter's sockets."""
    module.time = LoopTime()  # type: ignore[attr-defined]
    module.asyncio = HeldSleepAsyncio(triggers)  # type: ignore[attr-defined]
    module.async_sock_send = _sock_send  # type: ignore[attr-defined]
    module.async_sock_recv = _sock_recv  # type: ignore[attr-defined]
    module.wrap_as_pickle = lambda obj: obj  # type: ignore[attr-defined]


def dispatcher_class(upstream: type, module: ModuleType, label: str, triggers: Any) -> type:
    """The scenarios' `DPDispatcher` for one loaded version's upstream `DPDispatcher`."""
    _install_io(module, triggers)
    return type(
        "DPDispatcher",
        (DispatcherAdapter, upstream),
        {
            "_upstream": module,
            "_triggers": triggers,
            "__module__": f"reference.upstream[{label}]",
            "__doc__": f"Upstream {label} DPDispatcher, driven by {__name__}.",
        },
    )
