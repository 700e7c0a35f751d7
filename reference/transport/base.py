"""The transport interface the control plane talks through.

Upstream uses `requests` for HTTP to the bootstrap server (`/health`, `/route`) and ZMQ
PUSH sockets for decode-to-prefill messages. Components in this package never open a
socket themselves; they call a `Transport`, so one scenario runs unchanged on the
deterministic in-process mock and on real loopback sockets.

The PUSH socket cache lives on the transport (one per process, like upstream's
class-level `CommonKVReceiver._socket_cache`): `connect(endpoint)` returns the cached
socket with its lock, `disconnect(endpoint)` closes and forgets it (upstream:
`CommonKVReceiver.disconnect_endpoint`, which the heartbeat calls for a dead prefill).
A send is bounded (upstream's SNDTIMEO since #31144) and raises `TransportError` when
it times out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class TransportError(RuntimeError):
    """A send or request failed (upstream: `zmq.ZMQError`, `requests` exceptions)."""


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: status code and body (a JSON value, or text)."""

    status: int
    body: Any = ""


Frames = Sequence[bytes]
Handler = Callable[[list[bytes]], None]


class PushSocket(Protocol):
    """A cached PUSH socket. Hold `lock` around `send`, as upstream does."""

    lock: threading.Lock

    def send(self, frames: Frames) -> None:
        """Send one multipart message; TransportError after the send timeout."""
        ...


class Transport(Protocol):
    def health(self, bootstrap_addr: str) -> bool:
        """`GET /health` on a prefill's bootstrap server; True on a 200."""
        ...

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        """`GET /route?...`; TransportError when the server cannot be reached."""
        ...

    def register_dp_rank(self, bootstrap_addr: str, room: int, dp_rank: int) -> Reply:
        """`POST /register_dp_rank` (upstream: the prefill's sender, per room); TransportError
        when the server cannot be reached."""
        ...

    def connect(self, endpoint: str) -> PushSocket:
        """The cached PUSH socket to `endpoint` (`tcp://ip:port`), created on first use."""
        ...

    def disconnect(self, endpoint: str) -> None:
        """Close and forget the cached PUSH socket to `endpoint`, if any."""
        ...

    def bind_inbox(self, handler: Handler) -> str:
        """Bind this side's PULL socket; `handler` gets every message. Returns `ip:port`."""
        ...

    def register_memory(self, session: str, memory: Any) -> None:
        """Make `memory` writable by a prefill's data plane under `session` (memcpy)."""
        ...
