"""The DP dispatcher (upstream `DPDispatcher`, `encode_server.py` up to sglang 0.5.18).

The multimodal encoder server's main process, with dp_size > 1, routes each encode
request to a worker rank: the alive rank with the fewest pending requests, round-robin
on ties. It waits for the answer with a bound (a 504 answer on expiry, 503 when no rank
is alive) and keeps `req_id -> rank` for an encode that produced content, so that the
later `/send` of that request reaches the same rank. Three background loops, started
by `start()`, keep it honest:

- `_result_listener` resolves pending requests from the workers' replies;
- `_worker_watchdog` marks an exited rank dead, fails its pending requests at once
  and purges its mappings;
- `_cleanup_stale_mappings` evicts mappings whose `/send` never came.

Lesson `task-refs` (PR #33048) lives in `start()`, which a variant provides: before the
fix it created the three tasks bare; the event loop holds tasks only weakly.

Closing must stop the loops, but the buggy form keeps no reference to them. So each
loop registers itself in `_loop_tasks` (task -> loop name), weak keys: weak, so that it does not keep a
task alive and hide the bug, yet enough for `close()` to cancel what is still there.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from dataclasses import dataclass
from typing import Any

from reference.config import DispatcherConfig
from reference.transport.dp_base import Message, WorkerPool


@dataclass(frozen=True)
class Reply:
    """What a request gets back: 200 with content, or an error code and reason."""

    code: int
    content: Any = None
    error: str = ""
    rank: int | None = None


class DispatcherBase:
    def __init__(self, workers: WorkerPool, config: DispatcherConfig | None = None) -> None:
        self.workers = workers
        self.config = config or DispatcherConfig()
        self.dp_size = workers.size
        self.pending_futures: list[dict[str, asyncio.Future[Reply]]] = [{} for _ in range(self.dp_size)]
        self.req_id_to_rank: dict[str, int] = {}
        self._pending_send_at: dict[str, float] = {}
        self._rr_counter = 0
        self._dead_ranks: set[int] = set()
        self._listener_failed = False
        self._ids = itertools.count()
        self._loop_tasks: weakref.WeakKeyDictionary[asyncio.Task, str] = weakref.WeakKeyDictionary()
        self.evicted = 0  # mappings the stale-mapping sweep removed

    def start(self) -> None:
        raise NotImplementedError("a variant provides start")

    # -- routing -----------------------------------------------------------------
    @property
    def dead_ranks(self) -> frozenset[int]:
        return frozenset(self._dead_ranks)

    def all_ranks_alive(self) -> bool:
        """What backs the server's `/health`."""
        return not self._dead_ranks and not self._listener_failed

    def pending(self, rank: int) -> int:
        return len(self.pending_futures[rank])

    def mappings_to(self, rank: int) -> int:
        return sum(1 for r in self.req_id_to_rank.values() if r == rank)

    def _pick_rank(self) -> int | None:
        alive = [rank for rank in range(self.dp_size) if rank not in self._dead_ranks]
        if not alive:
            return None
        fewest = min(self.pending(rank) for rank in alive)
        tied = [rank for rank in alive if self.pending(rank) == fewest]
        rank = tied[self._rr_counter % len(tied)]
        self._rr_counter += 1
        return rank

    async def dispatch(self, payload: str, req_id: str | None = None) -> Reply:
        """Encode on the least-loaded alive rank, waiting at most `req_timeout`."""
        if self._listener_failed:
            return Reply(503, error="result listener failed")
        rank = self._pick_rank()
        if rank is None:
            return Reply(503, error="no DP rank alive")
        req_id = req_id or f"req-{next(self._ids)}"
        self.req_id_to_rank[req_id] = rank
        message = {"kind": "encode", "req_id": req_id, "payload": payload}
        return await self._call(rank, req_id, req_id, message, self.config.req_timeout)

    async def dispatch_send(self, req_id: str) -> Reply:
        """Hand an encoded result over; it must go to the rank that did the encode."""
        rank = self.req_id_to_rank.get(req_id)
        if rank is None:
            return Reply(404, error=f"no encode on record for {req_id}")
        if rank in self._dead_ranks:
            return Reply(503, error=f"DP rank {rank} died", rank=rank)
        key = f"{req_id}_send"
        message = {"kind": "send", "req_id": key}
        reply = await self._call(rank, req_id, key, message, self.config.send_timeout)
        self._forget(req_id)
        return reply

    async def _call(self, rank: int, req_id: str, key: str, message: Message, timeout: float) -> Reply:
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.pending_futures[rank][key] = future
        try:
            async with asyncio.timeout(timeout):
                await self.workers.send(rank, message)
                return await future
        except TimeoutError:
            self.pending_futures[rank].pop(key, None)
            self._forget(req_id)
            return Reply(504, error=f"DP rank {rank} did not answer within {timeout:g} s", rank=rank)

    def _forget(self, req_id: str) -> None:
        self.req_id_to_rank.pop(req_id, None)
        self._pending_send_at.pop(req_id, None)

    # -- the three background loops --------------------------------------------------
    def _register_loop_task(self, name: str) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._loop_tasks[task] = name

    async def _result_listener(self) -> None:
        self._register_loop_task("_result_listener")
        errors = 0
        while True:
            try:
                reply = await self.workers.recv()
            except Exception:
                errors += 1
                if errors >= self.config.listener_max_errors:
                    self._give_up_listening()
                    return
                await asyncio.sleep(min(0.1 * errors, 1.0))
                continue
            errors = 0
            self._resolve(reply)

    def _resolve(self, reply: Message) -> None:
        rank, key = reply.get("rank"), str(reply.get("req_id"))
        if not isinstance(rank, int) or not 0 <= rank < self.dp_size:
            return
        future = self.pending_futures[rank].pop(key, None)
        if future is None or future.done():
            return  # a late answer to a request that already timed out
        if "error" in reply:
            self._forget(key)
            future.set_result(Reply(int(reply.get("code", 500)), error=str(reply["error"]), rank=rank))
            return
        if reply.get("kind") == "encode" and reply.get("content"):
            self._pending_send_at[key] = asyncio.get_running_loop().time()
        else:
            self._forget(key)
        future.set_result(Reply(200, content=reply.get("content"), rank=rank))

    def _give_up_listening(self) -> None:
        self._listener_failed = True
        for rank in range(self.dp_size):
            self._fail_pending(rank, "result listener failed")

    async def _worker_watchdog(self) -> None:
        self._register_loop_task("_worker_watchdog")
        while True:
            rank = await self.workers.exits.next()
            self._on_rank_exit(rank)

    def _on_rank_exit(self, rank: int) -> None:
        self._dead_ranks.add(rank)
        self._fail_pending(rank, f"DP rank {rank} died")
        for req_id in [r for r, owner in self.req_id_to_rank.items() if owner == rank]:
            self._forget(req_id)

    def _fail_pending(self, rank: int, reason: str) -> None:
        futures, self.pending_futures[rank] = self.pending_futures[rank], {}
        for future in futures.values():
            if not future.done():
                future.set_result(Reply(503, error=reason, rank=rank))

    async def _cleanup_stale_mappings(self) -> None:
        self._register_loop_task("_cleanup_stale_mappings")
        while True:
            await asyncio.sleep(self.config.cleanup_interval)
            self.sweep_stale_mappings()

    def sweep_stale_mappings(self) -> int:
        """Evict mappings whose `/send` has not come within `send_timeout`."""
        now = asyncio.get_running_loop().time()
        stale = [r for r, at in self._pending_send_at.items() if now - at > self.config.send_timeout]
        for req_id in stale:
            self._forget(req_id)
        self.evicted += len(stale)
        return len(stale)

    # -- lifecycle ---------------------------------------------------------------------
    def loop_tasks(self) -> dict[str, asyncio.Task]:
        """The background loops still alive, by coroutine name (strong refs: drop them)."""
        return {name: task for task, name in list(self._loop_tasks.items()) if not task.done()}

    async def close(self) -> None:
        tasks = [task for task in list(self._loop_tasks) if not task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for rank in range(self.dp_size):
            for future in self.pending_futures[rank].values():
                future.cancel()
            self.pending_futures[rank].clear()
