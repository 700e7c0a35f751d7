"""The decode's registered KV pool, as the control-plane lessons see it.

Upstream, the decode registers its KV cache memory with a transfer engine and sends the
pointers in its registration message; the prefill writes each page straight into it.
Here that pool is a `KVMemory`: a bytearray cut into one region per prefill rank the
decode receives from, written by a `KVWriter` (`writers.py`). Memory a real backend
registers (host bytes or torch tensors) is a `KVPages` (`pages.py`).
"""

from __future__ import annotations

import threading


class KVMemory:
    """The decode's registered KV pool: `regions` regions of `pages` pages of `item_len`."""

    def __init__(self, regions: int = 2, pages: int = 64, item_len: int = 64) -> None:
        self.regions, self.pages, self.item_len = regions, pages, item_len
        self.plane = ""  # no backend registration: the default planes (memcpy, KV frames) need none
        self._buf = bytearray(regions * pages * item_len)
        self._lock = threading.Lock()

    def region_ptr(self, region: int) -> int:
        if not 0 <= region < self.regions:
            raise ValueError(f"region {region} outside 0..{self.regions - 1}")
        return region * self.pages * self.item_len

    def page_ptr(self, region: int, page: int) -> int:
        return self.region_ptr(region) + page * self.item_len

    def write(self, ptr: int, data: bytes) -> None:
        if ptr < 0 or ptr + len(data) > len(self._buf):
            raise ValueError(f"write of {len(data)} bytes at {ptr} outside the registered memory")
        with self._lock:
            self._buf[ptr : ptr + len(data)] = data

    def read(self, ptr: int, size: int) -> bytes:
        with self._lock:
            return bytes(self._buf[ptr : ptr + size])

    def zero(self, region: int, pages: list[int]) -> None:
        for page in pages:
            self.write(self.page_ptr(region, page), bytes(self.item_len))
