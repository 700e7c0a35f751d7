"""The transport interface the control plane talks through.

Upstream uses `requests` for HTTP to the bootstrap server (`/health`, `/route`) and ZMQ
PUSH sockets for decode-to-prefill messages. Components in this package never open a
socket themselves; they call a `Transport`, so one scenario runs unchanged on the
deterministic in-process mock and on real loopback sockets.
"""

from __future__ import annotations

from typing import Protocol


class TransportError(RuntimeError):
    """A send or request failed (upstream: `zmq.ZMQError`, `requests` exceptions)."""


class Transport(Protocol):
    def health(self, bootstrap_addr: str) -> bool:
        """`GET /health` on a prefill's bootstrap server; True on a 200."""
        ...

    def disconnect(self, endpoint: str) -> None:
        """Close and forget the cached PUSH socket to `endpoint`, if any."""
        ...
