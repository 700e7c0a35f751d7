"""KV cache memory a backend can register: host bytes, or a torch tensor (CPU or CUDA).

sglang's KV pool is a set of torch tensors on the GPU, and the transfer engine registers
their base pointers. Here a buffer is `num_pages` pages of `page_size` bytes at one base
address, so that page `i` lives at `address + i * page_size` for every backend. Host
pages are a `bytearray` (pinned in place by a ctypes view, so its address never moves);
tensor pages need torch, imported only when asked for.
"""

from __future__ import annotations

import ctypes
import hashlib
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from reference.dataplane.errors import DeviceUnavailable


class KVPages(ABC):
    """Pages of one KV buffer, with the few operations transfers and checks need."""

    device = "cpu"

    def __init__(self, num_pages: int, page_size: int) -> None:
        if num_pages < 1 or page_size < 1:
            raise ValueError(f"need at least one page of at least one byte, got {num_pages} x {page_size}")
        self.num_pages, self.page_size = num_pages, page_size

    @property
    def nbytes(self) -> int:
        return self.num_pages * self.page_size

    @property
    @abstractmethod
    def address(self) -> int:
        """Base address of page 0 (a device pointer for CUDA memory)."""

    @abstractmethod
    def read(self, first: int, count: int = 1) -> bytes: ...

    @abstractmethod
    def write(self, first: int, data: bytes) -> None: ...

    def fill(self, seed: int) -> str:
        """Fill every page with reproducible bytes; return the checksum of the whole buffer."""
        self.write(0, random.Random(seed).randbytes(self.nbytes))
        return self.checksum()

    def checksum(self, pages: Sequence[int] | None = None) -> str:
        """sha256 of the given pages in order (all pages by default)."""
        digest = hashlib.sha256()
        if pages is None:
            digest.update(self.read(0, self.num_pages))
        else:
            for page in pages:
                digest.update(self.read(page))
        return digest.hexdigest()


class HostPages(KVPages):
    def __init__(self, num_pages: int, page_size: int) -> None:
        super().__init__(num_pages, page_size)
        self._bytes = bytearray(self.nbytes)
        self._view = (ctypes.c_char * self.nbytes).from_buffer(self._bytes)  # pins the address

    @property
    def address(self) -> int:
        return ctypes.addressof(self._view)

    def read(self, first: int, count: int = 1) -> bytes:
        start = first * self.page_size
        return bytes(self._bytes[start : start + count * self.page_size])

    def write(self, first: int, data: bytes) -> None:
        start = first * self.page_size
        if len(data) % self.page_size or start + len(data) > self.nbytes:
            raise ValueError(f"{len(data)} bytes at page {first} do not fit whole pages of the buffer")
        self._bytes[start : start + len(data)] = data


class TensorPages(KVPages):
    """A uint8 torch tensor; on CUDA, reads and writes are device copies."""

    def __init__(self, num_pages: int, page_size: int, device: str = "cpu") -> None:
        super().__init__(num_pages, page_size)
        import torch  # optional: only the torch backend and CUDA checks need it

        self._torch = torch
        self.device = device
        self.tensor: Any = torch.zeros(self.nbytes, dtype=torch.uint8, device=device)

    @property
    def address(self) -> int:
        return int(self.tensor.data_ptr())

    def read(self, first: int, count: int = 1) -> bytes:
        start = first * self.page_size
        chunk = self.tensor[start : start + count * self.page_size].to("cpu").contiguous()
        return ctypes.string_at(chunk.data_ptr(), chunk.numel())  # one copy, no numpy needed

    def write(self, first: int, data: bytes) -> None:
        start = first * self.page_size
        if len(data) % self.page_size or start + len(data) > self.nbytes:
            raise ValueError(f"{len(data)} bytes at page {first} do not fit whole pages of the buffer")
        source = self._torch.frombuffer(bytearray(data), dtype=self._torch.uint8)
        self.tensor[start : start + len(data)].copy_(source)
        self.synchronize()

    def synchronize(self) -> None:
        if self.device.startswith("cuda"):
            self._torch.cuda.synchronize(self.device)


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else CPU; an explicit CUDA device must exist."""
    if device == "cpu":
        return device
    try:
        import torch  # only for CUDA memory
    except ImportError:
        if device == "auto":
            return "cpu"
        raise DeviceUnavailable(
            f"device {device} needs torch (pip install -c ci/constraints.txt '.[torch]')"
        ) from None
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceUnavailable(f"device {device} asked for, but torch {torch.__version__} sees no CUDA GPU")
    return device


def host_pages(num_pages: int, page_size: int) -> KVPages:
    return HostPages(num_pages, page_size)
