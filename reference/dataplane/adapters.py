"""Adapters that put a real backend under the control plane's KV transfer step.

The prefill rank (`PrefillRank._transfer`) "transfers" a request's KV by calling its
`KVWriter` once per page, `write(registration, dst_ptr, page_bytes)`, with the decode's
`REGISTER` message as `registration`, and then reports Success with a digest of what
it sent. The decode reads the pages back out of its `KVMemory` to verify them. Two
adapters make those two seams run over any backend:

- `PlaneWriter` is a `KVWriter`: it stages the page in the prefill's own registered
  memory and writes it with `DataPlane.write_pages` into the decode's buffer named by
  the registration's `plane` field (a `MemoryRegistration` as JSON). A write that fails
  raises `TransportError`, so the prefill reports Failed instead of Success.
- `RankMemory` is a `KVMemory` whose bytes live in a decode rank process
  (`RankProcess`) that registered them with the backend. Pointers are
  `address + offset` of that registration, so the writer maps them back to pages.

The decode rank's registration travels in every `REGISTER` message; a restarted
prefill has none until the decode registers again, which is what the fix restores.
"""

from __future__ import annotations

import json
from typing import Any

from reference.dataplane.base import DataPlane, MemoryRegistration
from reference.dataplane.pages import KVPages
from reference.dataplane.remote import RankProcess
from reference.transport.base import TransportError

STAGING_PAGES = 64  # prefill-side registered pages a writer cycles through


class PlaneWriter:
    """A prefill rank's `KVWriter` over a `DataPlane`."""

    def __init__(self, plane: DataPlane, timeout: float = 5.0) -> None:
        self.plane, self.name, self.timeout = plane, plane.name, timeout
        self._staging: KVPages | None = None
        self._next = 0

    def _slot(self, page_size: int) -> tuple[KVPages, int]:
        if self._staging is None or self._staging.page_size != page_size:
            self._staging = self.plane.allocate(STAGING_PAGES, page_size)
        slot, self._next = self._next, (self._next + 1) % STAGING_PAGES
        return self._staging, slot

    def write(self, registration: Any, dst_ptr: int, data: bytes) -> None:
        plane_json = getattr(registration, "plane", "")
        if not plane_json:
            raise TransportError(f"decode registered no {self.name} buffer (REGISTER without a plane field)")
        target = MemoryRegistration.from_json(json.loads(plane_json))
        page, misaligned = divmod(dst_ptr - target.address, target.page_size)
        if misaligned or len(data) != target.page_size:
            raise TransportError(
                f"write of {len(data)} bytes at {dst_ptr} is not one whole page of the buffer"
            )
        staging, slot = self._slot(target.page_size)
        staging.write(slot, data)
        result = self.plane.write_pages(staging, [slot], target, [page], self.timeout)
        if not result.ok:
            raise TransportError(f"{self.name} write to {target.peer} failed: {result.error}")


class RankMemory:
    """The decode's registered KV pool (`regions` x `pages` x `item_len`), held by a rank process."""

    def __init__(self, rank: RankProcess, regions: int = 2, pages: int = 64, item_len: int = 64) -> None:
        self.rank, self.regions, self.pages, self.item_len = rank, regions, pages, item_len
        rank.allocate(regions * pages, item_len)
        self.registration = rank.register()
        self.plane = json.dumps(self.registration.to_json())  # what REGISTER carries

    def region_ptr(self, region: int) -> int:
        if not 0 <= region < self.regions:
            raise ValueError(f"region {region} outside 0..{self.regions - 1}")
        return self.registration.address + region * self.pages * self.item_len

    def page_ptr(self, region: int, page: int) -> int:
        return self.region_ptr(region) + page * self.item_len

    def _page(self, ptr: int, size: int) -> tuple[int, int]:
        first, misaligned = divmod(ptr - self.registration.address, self.item_len)
        count = size // self.item_len
        if misaligned or size % self.item_len or not 0 <= first <= first + count <= self.regions * self.pages:
            raise ValueError(f"{size} bytes at {ptr} are not whole pages of the registered memory")
        return first, count

    def read(self, ptr: int, size: int) -> bytes:
        first, count = self._page(ptr, size)
        return self.rank.read(first, count)

    def write(self, ptr: int, data: bytes) -> None:
        first, _ = self._page(ptr, len(data))
        self.rank.store(first, data)

    def zero(self, region: int, pages: list[int]) -> None:
        for page in pages:
            self.write(self.page_ptr(region, page), bytes(self.item_len))
