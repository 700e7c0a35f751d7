"""One decode rank on the loopback transport, driven the way the decode scheduler does.

It owns a `LoopbackTransport` (real HTTP and ZMQ on 127.0.0.1), the variant's
`KVManager` on the real clock with its inbox and KV memory, and talks to a
`LoopbackPrefill` (two TP ranks, its own OS process). Used by the receiver set-up
benchmark (`set_up`: construct, `init`, `send_metadata`, timed without the wait) and
by the recovery benchmark (`request`: one whole request, then `clear`).

Real time, not the virtual clock: these are benchmarks. The waiting timeout is cut
from upstream's 300 s to `waiting_timeout` so a request lost in the kill ends inside
the horizon (the fixed form also invalidates its cache there); the heartbeat keeps
upstream's defaults (5 s x 2 misses). PUSH-socket options are upstream's unless
`sockets` says otherwise (`reference/transport/sockets.py`).
"""

from __future__ import annotations

import itertools
import threading
import time
from types import ModuleType
from typing import Any

from benchmarks.stream import Outcome
from reference.clock import RealClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.status import KVPoll
from reference.transport.loopback import LoopbackTransport
from reference.transport.sockets import UPSTREAM, SocketOptions

PAGES_PER_REQUEST, ITEM_LEN = 4, 64
DONE = (KVPoll.Success, KVPoll.Failed)
WAITING_TIMEOUT = 1.0  # upstream 300 s; see the module docstring
POLL_S = 0.001


class LoopbackDecode:
    def __init__(
        self,
        module: ModuleType,
        prefill: Any,
        slots: int = 1,
        first_room: int = 1,
        sockets: SocketOptions = UPSTREAM,
        waiting_timeout: float = WAITING_TIMEOUT,
        transport: Any = None,  # another transport with those socket options (the netns rows)
    ) -> None:
        self.module, self.prefill = module, prefill
        self.transport = transport or LoopbackTransport(
            send_timeout=sockets.send_timeout, immediate=sockets.immediate
        )
        self.memory = KVMemory(regions=2, pages=slots * PAGES_PER_REQUEST, item_len=ITEM_LEN)
        config = ManagerConfig(waiting_timeout=waiting_timeout)
        self.manager = module.KVManager(self.transport, config, RealClock())
        self.manager.listen(self.memory)
        self.addr = prefill.bootstrap_addr
        if not self.manager.try_ensure_parallel_info(self.addr):
            self.close()
            raise RuntimeError(f"prefill {self.addr} did not answer GET /route")
        self.wait_bound = waiting_timeout + sockets.send_timeout + 2.0
        self._rooms = itertools.count(first_room)
        self._rooms_lock = threading.Lock()
        self.pending: list[Any] = []
        self.succeeded = self.failed = 0

    # -- the set-up benchmark -----------------------------------------------------------
    def set_up(self, room: int) -> None:
        receiver = self.module.KVReceiver(self.manager, self.addr, room)
        receiver.init(0)
        receiver.send_metadata(self._pages(0))
        self.pending.append(receiver)

    def finish_pending(self) -> None:
        for receiver in self.pending:
            if self._wait(receiver) == KVPoll.Success:
                self.succeeded += 1
            else:
                self.failed += 1
            receiver.clear()
        self.pending.clear()

    def forget_cache(self) -> None:
        with self.manager.connection_lock:
            self.manager.connection_pool.clear()

    # -- the recovery benchmark -----------------------------------------------------------
    def request(self, slot: int = 0) -> Outcome:
        with self._rooms_lock:
            room = next(self._rooms)
        receiver = self.module.KVReceiver(self.manager, self.addr, room)
        receiver.init(0)
        if receiver.poll() != KVPoll.Failed:
            receiver.send_metadata(self._pages(slot))
        status = self._wait(receiver)
        ports = tuple(int(info["rank_port"]) for info in receiver.bootstrap_infos or [])
        with self.manager.failure_lock:
            reason = self.manager.failure_records.pop(room, None)
        receiver.clear()
        return Outcome(status == KVPoll.Success, receiver._bootstrap_key(0), ports, reason or "")

    # -- shared -----------------------------------------------------------------------------
    def _pages(self, slot: int) -> list[int]:
        return list(range(slot * PAGES_PER_REQUEST, (slot + 1) * PAGES_PER_REQUEST))

    def _wait(self, receiver: Any) -> KVPoll:
        deadline = time.monotonic() + self.wait_bound
        status = receiver.poll()
        while status not in DONE and time.monotonic() < deadline:
            time.sleep(POLL_S)  # the answer comes from another process
            status = receiver.poll()
        return KVPoll(status)

    def close(self) -> None:
        self.manager.close()
        self.transport.close()

    def __enter__(self) -> LoopbackDecode:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
