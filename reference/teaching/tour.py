"""One request's life through the reference components, step by step (notebook `00_tour`).

A `Tour` builds what a decode rank and a prefill instance are made of on the mock
transport: a `MockPrefill` (the bootstrap server's route table and two prefill ranks),
the decode's `KVManager` with its PULL inbox and registered KV memory, the heartbeat on
a `VirtualClock`, then one `KVReceiver` for one request. Each step is one method that
does what upstream's code does at that point and returns a few lines saying what
changed. A `RecordingNetwork` writes down every message that crosses the network, so
`sequence()` draws the messages that really flowed, in order. `TOPOLOGY` is the
who-talks-to-whom picture of the same pieces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import reference.fixed
from reference import wire
from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.prefill.mock import MockPrefill
from reference.status import KVPoll
from reference.teaching.sequences import Edge, Node, Sequence, Step, Topology
from reference.transport.base import Reply
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
TP_SIZE, ROOM, PAGES = 2, 42, [0, 1, 2, 3]
DECODE, MANAGER, HEARTBEAT = "decode receiver", "decode manager", "heartbeat"
BOOTSTRAP, MEMORY = "bootstrap server", "decode memory"


@dataclass(frozen=True)
class Message:
    source: str
    target: str
    what: str


class RecordingNetwork(MockNetwork):
    """The mock network, writing down who sent what to whom."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.log: list[Message] = []
        self.names: dict[str, str] = {}  # endpoint -> who listens there

    def note(self, source: str, target: str, what: str) -> None:
        self.log.append(Message(source, target, what))

    def health(self, bootstrap_addr: str) -> bool:
        alive = super().health(bootstrap_addr)
        self.note(HEARTBEAT, BOOTSTRAP, f"GET /health -> {200 if alive else 'no answer'}")
        return alive

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        reply = super().get_route(bootstrap_addr, params)
        everything = set(params.values()) == {-1}  # the manager's parallel-info fetch
        which = "all ranks (-1)" if everything else f"tp {params['target_tp_rank']}"
        port = reply.body.get("rank_port", "") if isinstance(reply.body, dict) else ""
        source = MANAGER if everything else DECODE
        self.note(source, BOOTSTRAP, f"GET /route {which} -> {reply.status} {port}".rstrip())
        return reply

    def deliver(self, endpoint: str, frames: list[bytes]) -> None:
        message = wire.decode(frames)
        source = f"prefill rank {message.prefill_rank}" if isinstance(message, wire.Status) else DECODE
        what = frames[0].decode()
        if isinstance(message, wire.Status):
            what += f" room {message.room}: {KVPoll(message.status).name}"
        self.note(source, self.names.get(endpoint, endpoint), what)
        super().deliver(endpoint, frames)


class RecordingMemory(KVMemory):
    """The decode's KV memory, noting each page a prefill rank writes into it (memcpy)."""

    def __init__(self, net: RecordingNetwork, **sizes: int) -> None:
        super().__init__(**sizes)
        self.net = net

    def write(self, ptr: int, data: bytes) -> None:
        region = ptr // (self.pages * self.item_len)
        if any(data):  # zeroing a page is the decode's own housekeeping
            self.net.note(f"prefill rank {region}", MEMORY, "KV page (memcpy)")
        super().write(ptr, data)


class Tour:
    def __init__(self, variant: ModuleType = reference.fixed) -> None:
        self.variant = variant
        self.clock = VirtualClock()
        self.net = RecordingNetwork(self.clock)
        self.config = ManagerConfig()
        self.prefill: Any = None
        self.manager: Any = None
        self.receiver: Any = None

    def start_prefill(self) -> str:
        self.prefill = MockPrefill(self.net, ADDR, tp_size=TP_SIZE)
        for rank, endpoint in enumerate(self.prefill.endpoints):
            self.net.names[endpoint] = f"prefill rank {rank}"
            self.net.note(f"prefill rank {rank}", BOOTSTRAP, f"PUT /route port {endpoint.rsplit(':', 1)[1]}")
        table = self.prefill.table
        rows = [
            f"  slot (dp, cp, tp, pp) {slot}: {info}"
            for slot, info in sorted(table.prefill_port_table.items())
        ]
        return "\n".join([f"bootstrap server at {ADDR}; its route table now holds:", *rows])

    def start_decode(self) -> str:
        self.manager = self.variant.KVManager(self.net, self.config, self.clock)
        memory = RecordingMemory(self.net, regions=TP_SIZE, pages=16, item_len=64)
        inbox = self.manager.listen(memory)
        self.net.names[f"tcp://{inbox.endpoint}"] = "decode inbox"
        return f"decode KV manager up; its PULL socket (inbox) at {inbox.endpoint}; KV memory registered"

    def fetch_parallel_info(self) -> str:
        ok = self.manager.try_ensure_parallel_info(ADDR)
        info = self.manager.prefill_info_table.get(ADDR)
        return f"try_ensure_parallel_info -> {ok}; prefill_info_table[{ADDR!r}] = {info}"

    def start_heartbeat(self) -> str:
        self.manager.start_heartbeat()
        self.clock.wait_for_sleepers(1)
        self.clock.advance(self.config.heartbeat_interval)
        return (
            f"heartbeat thread probing every {self.config.heartbeat_interval:g} s (virtual); "
            f"rounds so far: {self.manager.heartbeat_rounds}; misses: {self.manager.heartbeat_failures}"
        )

    def open_request(self, room: int = ROOM) -> str:
        self.receiver = self.variant.KVReceiver(self.manager, ADDR, room)
        return f"receiver for room {room}: {self._status()}; tracked under {ADDR}: {self._tracked()}"

    def init_receiver(self) -> str:
        self.receiver.init(0)
        ranks = [rank.registrations for rank in self.prefill.ranks]
        return (
            f"init: {self._status()}; connection_pool = {self.manager.connection_pool}\n"
            f"registrations received per prefill rank: {ranks}"
        )

    def send_metadata(self) -> str:
        self.receiver.send_metadata(PAGES)
        return f"send_metadata(pages {PAGES}): {self._status()}"

    def poll(self) -> str:
        status = KVPoll(self.receiver.poll()).name
        return f"poll -> {status}; KV bytes are exactly what each prefill rank sent: {self._bytes_ok()}"

    def clear(self) -> str:
        self.receiver.clear()
        return f"clear: request_status = {self.manager.request_status}"

    def close(self) -> None:
        if self.manager is not None:
            self.manager.close()
        self.net.close()

    def _status(self) -> str:
        return KVPoll(self.manager.check_status(self.receiver.bootstrap_room)).name

    def _tracked(self) -> list[int]:
        return sorted(self.manager.addr_to_rooms_tracker.get(ADDR, ()))

    def _bytes_ok(self) -> bool:
        memory, room = self.manager.inbox.memory, self.receiver.bootstrap_room
        for rank in range(TP_SIZE):
            arrived = [memory.read(memory.page_ptr(rank, page), memory.item_len) for page in PAGES]
            if arrived != [wire.kv_page(room, rank, j, memory.item_len) for j in range(len(PAGES))]:
                return False
        return True

    def sequence(self, title: str = "The messages that flowed, in order") -> Sequence:
        """The recorded log as a sequence diagram; repeats of one message are merged."""
        merged: list[tuple[Message, int]] = []
        for message in self.net.log:
            if merged and merged[-1][0] == message:
                merged[-1] = (message, merged[-1][1] + 1)
            else:
                merged.append((message, 1))
        steps = tuple(Step(m.source, m.target, m.what if n == 1 else f"{m.what} x{n}") for m, n in merged)
        ranks = [f"prefill rank {r}" for r in range(TP_SIZE)]
        actors = (HEARTBEAT, MANAGER, DECODE, "decode inbox", MEMORY, BOOTSTRAP, *ranks)
        return Sequence(title, actors, steps)


_SCHEDULER, _RECEIVER, _MANAGER = (
    "decode scheduler",
    "KVReceiver\n(one per request)",
    "KVManager\nstatus table, pool",
)
_HEARTBEAT, _INBOX = "heartbeat thread", "inbox (PULL)\n+ KV memory"
_SERVER, _RANKS = "bootstrap server\n(route table)", "prefill ranks\n(PULL each)"

TOPOLOGY = Topology(
    "Who talks to whom (one decode rank, one prefill instance)",
    (
        Node(_SCHEDULER, 0, 2.4, "decode"),
        Node(_HEARTBEAT, 0.7, 2.4, "decode"),
        Node(_RECEIVER, 0, 1.2, "decode"),
        Node(_MANAGER, 1.7, 1.2, "decode"),
        Node(_INBOX, 0, 0, "decode"),
        Node(_SERVER, 3.6, 2.4, "prefill"),
        Node(_RANKS, 3.6, 0, "prefill"),
    ),
    (
        # each label starts with the numbers of the notebook's steps that use the arrow
        # (step 2, the decode starting, sends nothing); tests/test_teaching.py checks 1 and 3 to 9
        Edge(_RANKS, _SERVER, "1. PUT /route"),
        Edge(_MANAGER, _SERVER, "3. GET /route\n(all ranks)", bend=-0.25),
        Edge(_HEARTBEAT, _SERVER, "4. GET /health"),
        Edge(_HEARTBEAT, _MANAGER, "4. (on a miss) fail\nrooms of a dead prefill"),
        Edge(_SCHEDULER, _RECEIVER, "5. create, 6. init,\n8. poll, 9. clear"),
        Edge(_RECEIVER, _MANAGER, "5. status,\n6. pool"),
        Edge(_RECEIVER, _SERVER, "6. GET /route"),
        Edge(_RECEIVER, _RANKS, "6. REGISTER,\n7. METADATA"),
        Edge(_RANKS, _INBOX, "8. KV pages, STATUS"),
        Edge(_INBOX, _MANAGER, "8. Success"),
    ),
)
