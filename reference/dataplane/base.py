"""The data-plane interface: register a KV buffer, write pages into a peer's, learn the outcome.

In sglang the decode rank registers its KV cache with the transfer engine and sends the
buffer's description (session id, base pointers, item length) to each prefill rank it
talks to in the `Register` message; the prefill keeps it in `decode_kv_args_table` and,
for each request, writes the pages named in the `Metadata` message into that buffer.
A `MemoryRegistration` is that description, in a form any backend can ship over JSON.

It is only valid for the process that made it: after a restart the old one points at
a dead session, an unknown agent or an unregistered address, and a write through it
fails (`WriteResult.ok` is False with a one-line `error`). Only a fresh registration,
sent again by the receiver, makes transfers land again.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from reference.dataplane.errors import BackendUnavailable, TransferFailed
from reference.dataplane.pages import KVPages, host_pages

__all__ = ["BackendUnavailable", "DataPlane", "MemoryRegistration", "TransferFailed", "WriteResult"]

DEFAULT_WRITE_TIMEOUT = 5.0  # seconds a write may take before it counts as failed


@dataclass(frozen=True)
class MemoryRegistration:
    """What a receiver sends to a writer so that the writer can fill its pages."""

    backend: str
    peer: str  # how to reach the owner: ZMQ endpoint, Mooncake session id, NIXL agent name
    address: int  # base address of the buffer, or a registration token where there is none
    num_pages: int
    page_size: int
    meta: str = ""  # backend metadata the writer must load first (NIXL agent metadata, base64)
    device: str = "cpu"  # where the pages live: "cpu" or a CUDA device

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryRegistration:
        return cls(**data)


@dataclass(frozen=True)
class WriteResult:
    """The writer's view of one transfer: complete (every byte landed) or failed."""

    ok: bool
    nbytes: int
    seconds: float
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class DataPlane(ABC):
    """One rank's handle on a transfer backend. Close it to stop its threads and sockets."""

    name: str = ""

    def allocate(self, num_pages: int, page_size: int) -> KVPages:
        """Memory this backend can register (host bytes unless the backend says otherwise)."""
        return host_pages(num_pages, page_size)

    @abstractmethod
    def register(self, pages: KVPages) -> MemoryRegistration: ...

    @abstractmethod
    def deregister(self, registration: MemoryRegistration) -> None: ...

    @abstractmethod
    def _write(
        self,
        src: KVPages,
        src_pages: Sequence[int],
        target: MemoryRegistration,
        dst_pages: Sequence[int],
        timeout: float,
    ) -> None:
        """Move the pages; raise `TransferFailed` (or any error) when they did not all land."""

    @abstractmethod
    def close(self) -> None: ...

    def write_pages(
        self,
        src: KVPages,
        src_pages: Sequence[int],
        target: MemoryRegistration,
        dst_pages: Sequence[int],
        timeout: float = DEFAULT_WRITE_TIMEOUT,
    ) -> WriteResult:
        """Write `src_pages` of `src` into `dst_pages` of the target; never raises for a peer's fault."""
        check_pages(src, src_pages, target, dst_pages)
        started = time.perf_counter()
        nbytes = len(src_pages) * src.page_size
        try:
            self._write(src, src_pages, target, dst_pages, timeout)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            return WriteResult(False, 0, time.perf_counter() - started, error)
        return WriteResult(True, nbytes, time.perf_counter() - started)

    def __enter__(self) -> DataPlane:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def check_pages(
    src: KVPages, src_pages: Sequence[int], target: MemoryRegistration, dst_pages: Sequence[int]
) -> None:
    """Reject a malformed request before anything moves (a caller's error, not a peer's)."""
    if len(src_pages) != len(dst_pages):
        raise ValueError(f"{len(src_pages)} source pages but {len(dst_pages)} destination pages")
    if src.page_size != target.page_size:
        raise ValueError(f"page size {src.page_size} does not match the target's {target.page_size}")
    for name, pages, limit in (
        ("source", src_pages, src.num_pages),
        ("destination", dst_pages, target.num_pages),
    ):
        bad = [p for p in pages if not 0 <= p < limit]
        if bad:
            raise ValueError(f"{name} page {bad[0]} out of range 0..{limit - 1}")


def page_runs(src_pages: Sequence[int], dst_pages: Sequence[int]) -> list[tuple[int, int, int]]:
    """Merge page pairs into `(src_page, dst_page, count)` runs contiguous on both sides."""
    runs: list[tuple[int, int, int]] = []
    for s, d in zip(src_pages, dst_pages, strict=True):
        if runs and runs[-1][0] + runs[-1][2] == s and runs[-1][1] + runs[-1][2] == d:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((s, d, 1))
    return runs
