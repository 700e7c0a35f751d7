"""The control plane's KV transfer step: the prefill's `KVWriter` into the decode's `KVMemory`.

Upstream, the decode registers its KV cache memory with a transfer engine (Mooncake,
NIXL, ...) and sends the pointers in its registration message; the prefill writes
each page straight into that memory (an RDMA or TCP write), then reports Success on
the control plane. Here the decode's memory is a `KVMemory` (a bytearray cut into
one region per prefill rank it receives from) and the prefill's engine is a
`KVWriter`, one small interface with two default implementations:

- `MemcpyWriter` (mock transport): the decode registered its memory under its session
  id in-process; the write is a slice assignment.
- `ZmqBytesWriter` (loopback): the bytes travel as a `KV` message to the decode's PULL
  socket, on the same PUSH socket as the later status, so they arrive first; the
  decode's inbox copies them into memory.

A real backend (Mooncake, NIXL, torch) plugs in as another `KVWriter`: `PlaneWriter`
in `adapters.py`, with the decode's pool held by a rank process (`RankMemory`) that
registered it; the `REGISTER` message then carries that registration (`plane`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from reference.dataplane.memory import KVMemory
from reference.transport.base import TransportError
from reference.wire import KVWrite, Registration


class KVWriter(Protocol):
    """A prefill rank's transfer engine: write `data` at `dst_ptr` of a decode's memory."""

    name: str

    def write(self, registration: Registration, dst_ptr: int, data: bytes) -> None:
        """Raise TransportError when the bytes cannot be delivered."""
        ...


class MemcpyWriter:
    name = "memcpy"

    def __init__(self, registry: dict[str, KVMemory]) -> None:
        self._registry = registry

    def write(self, registration: Registration, dst_ptr: int, data: bytes) -> None:
        memory = self._registry.get(registration.session)
        if memory is None:
            raise TransportError(f"no memory registered under session {registration.session}")
        try:
            memory.write(dst_ptr, data)
        except ValueError as exc:
            raise TransportError(str(exc)) from None


class ZmqBytesWriter:
    name = "zmq-bytes"

    def __init__(self, send: Callable[[str, list[bytes]], None]) -> None:
        self._send = send  # (decode ip:port, frames), on the link that also carries status

    def write(self, registration: Registration, dst_ptr: int, data: bytes) -> None:
        self._send(registration.decode_endpoint, KVWrite(dst_ptr, data).frames())
