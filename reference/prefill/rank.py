"""One prefill rank's side of a KV transfer (upstream: `CommonKVManager` in PREFILL mode
plus the mooncake sender's transfer worker), with no transport.

A decode receiver first registers its KV memory with the rank (`REGISTER`: session,
pointer, page size; kept in `decode_kv_args_table`), then sends per-request metadata
(`METADATA`: room and the decode pages to fill). The rank "transfers": it writes each
page's bytes through its `KVWriter` (the data plane) and then pushes `[room, Success,
rank, sha256 of what it sent]` to the decode. Metadata from a decode that never
registered with *this* process, the situation of a decode still using ports learned
before a restart, gets a Failed status. `ABORT` marks a room to skip.
"""

from __future__ import annotations

from collections.abc import Callable

from reference import wire
from reference.dataplane import KVWriter
from reference.status import KVPoll
from reference.transport.base import TransportError

SendToDecode = Callable[[str, list[bytes]], None]  # (decode ip:port, frames); may raise TransportError


class PrefillRank:
    def __init__(self, rank_id: int, writer: KVWriter, send: SendToDecode) -> None:
        self.rank_id = rank_id
        self.writer = writer
        self.send = send
        self.decode_kv_args_table: dict[str, wire.Registration] = {}
        self.aborted: set[int] = set()
        self.registrations = 0
        self.transfers = 0
        self.unregistered = 0
        self.failed = 0
        self.malformed = 0

    def handle(self, frames: list[bytes]) -> None:
        try:
            message = wire.decode(frames)
        except ValueError:
            self.malformed += 1
            return
        if isinstance(message, wire.Registration):
            self.decode_kv_args_table[message.session] = message  # re-registering is idempotent
            self.registrations += 1
        elif isinstance(message, wire.Metadata):
            self._transfer(message)
        elif isinstance(message, wire.Abort):
            self.aborted.add(message.room)
        else:
            self.malformed += 1

    def _transfer(self, meta: wire.Metadata) -> None:
        if meta.room in self.aborted:
            return
        registration = self.decode_kv_args_table.get(meta.session)
        if registration is None:
            self.unregistered += 1
            self._report(meta.decode_endpoint, wire.Status(meta.room, KVPoll.Failed, self.rank_id))
            return
        item_len = registration.item_len
        pages = [wire.kv_page(meta.room, self.rank_id, j, item_len) for j in range(len(meta.kv_indices))]
        try:
            for index, page in zip(meta.kv_indices, pages, strict=True):
                self.writer.write(registration, registration.kv_ptr + index * item_len, page)
        except TransportError:
            self.failed += 1
            self._report(meta.decode_endpoint, wire.Status(meta.room, KVPoll.Failed, self.rank_id))
            return
        self.transfers += 1
        status = wire.Status(meta.room, KVPoll.Success, self.rank_id, wire.kv_digest(pages))
        self._report(registration.decode_endpoint, status)

    def _report(self, decode_endpoint: str, status: wire.Status) -> None:
        try:
            self.send(decode_endpoint, status.frames())
        except TransportError:
            self.failed += 1  # the decode is gone; nobody is left to tell
