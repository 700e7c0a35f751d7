"""Which PUSH-socket options the decode uses: upstream's (the default) or fail-fast.

Upstream's decode PUSH sockets (`CommonKVReceiver._connect`) set LINGER 0 and, since
sglang 0.5.17 (https://github.com/sgl-project/sglang/pull/31144), a 1 s send timeout
(SNDTIMEO), and leave ZMQ_IMMEDIATE at 0. With IMMEDIATE=0 a send to a peer that
died returns at once: the message queues silently for a peer that will never come
back (up to SNDHWM), so a request sent to a stale port ends only on its waiting
timeout (300 s by default). That is the path upstream really takes.

`fail-fast` sets IMMEDIATE=1: messages queue only on completed connections, so a
send to a dead port blocks for the send timeout and raises; the request fails at
once and (in the fixed form) invalidates its cache entry on the send failure. It is
an option, not upstream; every result row and benchmark row names the options used.

On the mock network the same two behaviours are modelled: `upstream` drops a message
to an endpoint nobody is bound to without an error, `fail-fast` raises at once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SOCKETS = ("upstream", "fail-fast")


@dataclass(frozen=True)
class SocketOptions:
    name: str
    immediate: bool  # ZMQ_IMMEDIATE
    send_timeout: float  # ZMQ_SNDTIMEO, seconds

    @property
    def label(self) -> str:
        """What a result or benchmark row prints, e.g. `upstream (IMMEDIATE=0, SNDTIMEO 1 s)`."""
        return f"{self.name} (IMMEDIATE={int(self.immediate)}, SNDTIMEO {self.send_timeout:g} s)"

    def with_send_timeout(self, seconds: float) -> SocketOptions:
        return replace(self, send_timeout=seconds)


UPSTREAM = SocketOptions("upstream", immediate=False, send_timeout=1.0)
FAIL_FAST = SocketOptions("fail-fast", immediate=True, send_timeout=0.5)
BY_NAME = {options.name: options for options in (UPSTREAM, FAIL_FAST)}
assert tuple(BY_NAME) == SOCKETS


def socket_options(name: str | SocketOptions) -> SocketOptions:
    """The options for a name in `SOCKETS`; a one-line ValueError naming the choices otherwise."""
    if isinstance(name, SocketOptions):
        return name
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown socket options {name!r} (choose from {', '.join(SOCKETS)})") from None
