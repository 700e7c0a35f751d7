"""The `default` backend on the mock transport: memcpy between buffers of one process.

The mock transport runs decode and prefill in one process, so a "transfer" is a copy
from one buffer into another. It keeps the data plane's contract all the same: a
registration is a token in a process-wide table, `deregister` (or closing the plane,
which is what a restart does) removes it, and a write through a removed token fails
instead of landing.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence

from reference.dataplane.base import DataPlane, MemoryRegistration, TransferFailed, page_runs
from reference.dataplane.pages import KVPages

_TABLE: dict[int, KVPages] = {}  # every live registration of this process, by token
_TABLE_LOCK = threading.Lock()


class LocalPlane(DataPlane):
    name = "default"

    def __init__(self) -> None:
        self._mine: set[int] = set()
        self.peer = f"local-{secrets.token_hex(4)}"

    def register(self, pages: KVPages) -> MemoryRegistration:
        token = secrets.randbits(62)
        with _TABLE_LOCK:
            _TABLE[token] = pages
        self._mine.add(token)
        return MemoryRegistration(
            self.name, self.peer, token, pages.num_pages, pages.page_size, device=pages.device
        )

    def deregister(self, registration: MemoryRegistration) -> None:
        with _TABLE_LOCK:
            _TABLE.pop(registration.address, None)
        self._mine.discard(registration.address)

    def _write(
        self,
        src: KVPages,
        src_pages: Sequence[int],
        target: MemoryRegistration,
        dst_pages: Sequence[int],
        timeout: float,
    ) -> None:
        with _TABLE_LOCK:
            dst = _TABLE.get(target.address)
        if dst is None:
            raise TransferFailed(
                f"unknown registration at {target.peer} (deregistered, or its owner restarted)"
            )
        for s, d, count in page_runs(src_pages, dst_pages):
            dst.write(d, src.read(s, count))

    def close(self) -> None:
        with _TABLE_LOCK:
            for token in self._mine:
                _TABLE.pop(token, None)
        self._mine.clear()
