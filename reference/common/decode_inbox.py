"""The decode side's PULL socket handler (upstream: the decode manager's `rank_port`
socket and mooncake's decode thread).

Every prefill rank that finished a room's transfer pushes `[room, status, rank]` to the
decode; the room turns Success once every required prefill rank reported Success
(`required_prefill_response_num_table`), and Failed as soon as one reports Failed. On
the bytes-over-ZMQ data plane the KV pages arrive here too, just before the status, and
are copied into the decode's registered `KVMemory`.

Decisions: a status for a room that is no longer in `request_status` (cleared, e.g. after
its waiting timeout), or that the manager's `accepts_transfer_status` refuses, is dropped
and counted, as is a malformed message; the listener
never dies on bad input. The prefill's digest of what it sent is kept per (room, rank)
so a scenario can check that the bytes that arrived are the bytes that were sent.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from reference import wire
from reference.dataplane import KVMemory
from reference.status import KVPoll


class StatusSink(Protocol):
    """What the inbox needs of the decode's manager (`common/manager.py` provides it)."""

    request_status: dict[int, KVPoll]
    prefill_response_tracker: defaultdict[int, set[int]]
    required_prefill_response_num_table: dict[int, int]

    def record_failure(self, bootstrap_room: int, reason: str) -> None: ...

    def update_status(self, bootstrap_room: int, status: KVPoll) -> None: ...


class DecodeInbox:
    def __init__(self, manager: StatusSink, memory: KVMemory) -> None:
        self.manager = manager
        self.memory = memory
        self.endpoint = ""  # ip:port of the PULL socket, set when bound
        self.reported_digests: dict[tuple[int, int], bytes] = {}
        self.dropped = 0
        self.kv_writes = 0

    @property
    def session(self) -> str:
        """The data-plane session id decode registers with prefill (mooncake: ip:port)."""
        return self.endpoint

    def handle(self, frames: list[bytes]) -> None:
        try:
            message = wire.decode(frames)
        except ValueError:
            self.dropped += 1
            return
        if isinstance(message, wire.KVWrite):
            self._on_kv(message)
        elif isinstance(message, wire.Status):
            self._on_status(message)
        else:
            self.dropped += 1

    def _on_kv(self, message: wire.KVWrite) -> None:
        try:
            self.memory.write(message.ptr, message.data)
            self.kv_writes += 1
        except ValueError:
            self.dropped += 1

    def _on_status(self, message: wire.Status) -> None:
        mgr, room = self.manager, message.room
        accepts = getattr(mgr, "accepts_transfer_status", None)  # a manager may narrow it (hardened)
        if not (accepts(room) if accepts is not None else room in mgr.request_status):
            self.dropped += 1
            return
        if message.status == KVPoll.Failed:
            mgr.record_failure(room, f"prefill rank {message.prefill_rank} reported the transfer failed")
            mgr.update_status(room, KVPoll.Failed)
            return
        if message.status != KVPoll.Success:
            return
        self.reported_digests[(room, message.prefill_rank)] = message.digest
        arrived = mgr.prefill_response_tracker[room]
        arrived.add(message.prefill_rank)
        if len(arrived) >= mgr.required_prefill_response_num_table.get(room, 1):
            mgr.update_status(room, KVPoll.Success)
