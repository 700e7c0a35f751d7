"""The netns transport's sockets: upstream's loopback code, on a host of the suite's network.

`NetnsTransport` is the decode side, in the harness's own process: a `LoopbackTransport`
whose every socket is made with the calling thread inside the decode host's namespace
(`ns.entered`), so its HTTP connections, its PUSH sockets (their connects run on the
zmq I/O threads, which are started inside the namespace) and its inbox all live there;
the threads of the control plane itself stay where they are. `HostLink` is the same
code inside a prefill process that already runs in its namespace. Both talk only to
198.18.0.0/15 (the suite's addresses), with upstream's socket options unchanged, and
never read proxy settings from the environment.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

import zmq

from reference.netns import ns
from reference.transport.base import Handler, Reply, TransportError
from reference.transport.loopback import LoopbackPushSocket, LoopbackTransport

SUITE_NET = ipaddress.ip_network("198.18.0.0/15")


def check_suite(addr: str) -> str:
    """`addr` when its host is in 198.18.0.0/15; TransportError otherwise."""
    host = addr.removeprefix("tcp://").rsplit(":", 1)[0]
    try:
        ok = ipaddress.ip_address(host) in SUITE_NET
    except ValueError:
        ok = False
    if not ok:
        raise TransportError(f"the netns transport only talks to {SUITE_NET}, not {addr}")
    return addr


class HostLink(LoopbackTransport):
    """Loopback's transport on `host`, a suite address (inside a process already in its namespace)."""

    def __init__(self, host: str, send_timeout: float = 1.0, immediate: bool = False,
                 watch_peers: bool = False) -> None:  # fmt: skip
        self.host = check_suite(f"{host}:0").rsplit(":", 1)[0]
        super().__init__(send_timeout, immediate, watch_peers=watch_peers)
        self._http.trust_env = False  # no proxy: the suite's network has nothing else on it

    def _checked(self, addr: str) -> str:
        return check_suite(addr)


class NetnsTransport(HostLink):
    """The decode side: every socket made inside namespace `netns` (see the module docstring)."""

    def __init__(self, netns: str, host: str, send_timeout: float = 1.0, immediate: bool = False,
                 watch_peers: bool = False) -> None:  # fmt: skip
        self.netns = netns
        with ns.entered(netns):
            super().__init__(host, send_timeout, immediate, watch_peers=watch_peers)
            self.ctx.socket(zmq.PUSH).close(linger=0)  # starts the I/O threads here, in the namespace

    def health(self, bootstrap_addr: str) -> bool:
        with ns.entered(self.netns):
            return super().health(bootstrap_addr)

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        with ns.entered(self.netns):
            return super().get_route(bootstrap_addr, params)

    def register_dp_rank(self, bootstrap_addr: str, room: int, dp_rank: int) -> Reply:
        with ns.entered(self.netns):
            return super().register_dp_rank(bootstrap_addr, room, dp_rank)

    def connect(self, endpoint: str) -> LoopbackPushSocket:
        with ns.entered(self.netns):
            return super().connect(endpoint)

    def bind_inbox(self, handler: Handler) -> str:
        with ns.entered(self.netns):
            return super().bind_inbox(handler)
