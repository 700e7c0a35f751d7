"""A decode rank facing one restartable prefill, on the mock or the loopback transport.

`open_world(variant, transport)` builds the pieces lesson `stale-bootstrap` (and the
slow-prefill story) drive: a prefill with two TP ranks (`MockPrefill` in-process, or
`LoopbackPrefill`, its own OS process), the variant's `KVManager` with its inbox and KV
memory, the heartbeat on a `VirtualClock`, and `request(room)`, which runs one request
through the variant's `KVReceiver` the way the decode scheduler does: construct,
`init`, `send_metadata`, poll to the end, check the KV bytes, `clear`. Everything is
closed when the `with` block ends, however it ends.

Waiting: on the mock every message is delivered synchronously, so one poll tells. On
loopback a Success comes back from another process, so `request` polls for up to
`ANSWER_WITHIN` real seconds (a bound, not an ordering sleep). A request still waiting
after that lets the virtual clock pass the 300 s waiting timeout: on loopback the
waiting timeout is thereby shortened to `ANSWER_WITHIN` real seconds, and results say so.

Socket options (`sockets`, default upstream's, see `reference/transport/sockets.py`):
with upstream's IMMEDIATE=0 a send to a stale port "succeeds" (queued silently) and the
request ends on the waiting timeout; with `fail-fast` the send itself fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from reference import wire
from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.status import KVPoll
from reference.transport.kits import kit
from reference.transport.sockets import UPSTREAM, SocketOptions, socket_options

CONFIG = ManagerConfig()  # upstream defaults: 5 s heartbeat, 2 misses, 300 s waiting timeout
TP_SIZE, PAGES, PAGES_PER_REQUEST, ITEM_LEN = 2, 64, 4, 64
ANSWER_WITHIN = (
    1.0  # loopback: real seconds a live prefill may take to answer (the shortened waiting timeout)
)
DONE = (KVPoll.Success, KVPoll.Failed)


@dataclass(frozen=True)
class Outcome:
    room: int
    status: KVPoll
    ports: tuple[int, ...]  # the prefill rank ports this request used
    fetches: int  # route GETs made during this request
    bytes_ok: bool | None  # KV bytes checked (Success only)
    reason: str | None


class World:
    def __init__(self, variant: ModuleType, transport: Any, prefill: Any, clock: VirtualClock,
                 pump: Callable[[], Any], answer_within: float, memory: Any = None) -> None:  # fmt: skip
        self.variant, self.transport, self.prefill, self.clock = variant, transport, prefill, clock
        self.pump, self.answer_within = pump, answer_within
        self.memory = memory or KVMemory(regions=TP_SIZE, pages=PAGES, item_len=ITEM_LEN)
        self.manager = variant.KVManager(transport, CONFIG, clock)
        self.inbox = self.manager.listen(self.memory)
        self._next_page = 0

    @property
    def addr(self) -> str:
        return str(self.prefill.bootstrap_addr)

    def start(self) -> None:
        if not self.manager.try_ensure_parallel_info(self.addr):
            raise RuntimeError(f"prefill {self.addr} never answered GET /route")
        self.manager.start_heartbeat()
        self.clock.wait_for_sleepers(1)

    def tick(self) -> None:
        """One heartbeat interval of the steady stream: the heartbeat probes /health."""
        self.clock.advance(CONFIG.heartbeat_interval)
        self.pump()

    def request(self, room: int) -> Outcome:
        pages = self._pages()
        for region in range(self.memory.regions):
            self.memory.zero(region, pages)
        fetches = self.transport.route_fetches
        receiver = self.variant.KVReceiver(self.manager, self.addr, room)
        receiver.init(0)
        if receiver.poll() != KVPoll.Failed:
            receiver.send_metadata(pages)
        status = self._wait(receiver)
        infos = list(receiver.bootstrap_infos or [])
        checked = self._bytes_ok(room, infos, pages) if status == KVPoll.Success else None
        reason = self.manager.failure_records.get(room)
        receiver.clear()
        ports = tuple(int(info["rank_port"]) for info in infos)
        return Outcome(room, status, ports, self.transport.route_fetches - fetches, checked, reason)

    def _pages(self) -> list[int]:
        start, self._next_page = self._next_page, (self._next_page + PAGES_PER_REQUEST) % PAGES
        return list(range(start, start + PAGES_PER_REQUEST))

    def _wait(self, receiver: Any) -> KVPoll:
        deadline = time.monotonic() + self.answer_within
        while True:
            self.pump()
            status = receiver.poll()
            if status in DONE or time.monotonic() >= deadline:
                break
            time.sleep(0.002)  # a real answer is on its way from another process
        if status not in DONE:
            self.clock.advance(CONFIG.waiting_timeout)  # nobody answered: let the timeout pass
            status = receiver.poll()
        return KVPoll(status)

    def _bytes_ok(self, room: int, infos: list[dict], pages: list[int]) -> bool:
        """The bytes in decode memory are the prefill's pages, and the digest it reported."""
        for info in infos:
            rank = int(info["cp_rank"]) * TP_SIZE + int(info["tp_rank"])
            ptrs = [self.memory.page_ptr(int(info["region"]), page) for page in pages]
            arrived = [self.memory.read(ptr, ITEM_LEN) for ptr in ptrs]
            expected = [wire.kv_page(room, rank, j, ITEM_LEN) for j in range(len(pages))]
            if arrived != expected or self.inbox.reported_digests.get((room, rank)) != wire.kv_digest(
                arrived
            ):
                return False
        return True

    def close(self) -> None:
        self.manager.close()


def _backend_memory(backend: str, stack: ExitStack) -> Any:
    """The decode's KV pool: in this process by default, else registered by a decode rank process."""
    if backend == "default":
        return None
    from reference.dataplane.adapters import RankMemory
    from reference.dataplane.remote import RankProcess

    rank = stack.enter_context(RankProcess(backend))
    return RankMemory(rank, regions=TP_SIZE, pages=PAGES, item_len=ITEM_LEN)


def waiting_timeout_text(transport: str) -> str:
    """How long a request without an answer waits in this world, for results to report."""
    if kit(transport).in_process:
        return f"upstream's {CONFIG.waiting_timeout:g} s, on virtual time"
    return (
        f"{ANSWER_WITHIN:g} s real, shortened from upstream's {CONFIG.waiting_timeout:g} s for the scenario"
    )


@contextmanager
def open_world(
    variant: ModuleType,
    transport: str,
    backend: str = "default",
    sockets: str | SocketOptions = UPSTREAM,
    watch_peers: bool = False,
) -> Iterator[World]:
    clock = VirtualClock()
    options = socket_options(sockets)
    with ExitStack() as stack:
        chosen = kit(transport)
        if chosen.in_process:
            net = chosen.network(stack, clock, options, watch_peers)
            prefill = chosen.prefill(stack, net, TP_SIZE)
            world = World(variant, net, prefill, clock, net.pump, answer_within=0.0)
        else:
            memory = _backend_memory(backend, stack)
            prefill = chosen.prefill(stack, None, TP_SIZE, backend)
            net = chosen.network(stack, sockets=options, watch_peers=watch_peers)
            world = World(variant, net, prefill, clock, lambda: None, ANSWER_WITHIN, memory)
        stack.callback(world.close)
        yield world
