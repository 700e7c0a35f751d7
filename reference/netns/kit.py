"""The `netns` transport's kit: each host its own network namespace (see `topology.py`).

`network()` builds a topology (the bridge and a decode host) and returns the decode's
`NetnsTransport`; each `prefill()` adds a host `prefill-<index>` and starts a
`NetnsPrefill` on it; `serving(server)` starts an in-process bootstrap server bound
inside a prefill host's namespace and reaches it from the decode host. A world that
starts its prefill before its network (`prefill(net=None)`) gets both on one topology. Everything is
removed when the stack closes. DP encoder workers are decode-local processes (same
host as their dispatcher, as upstream): the pool is loopback's, on 127.0.0.1.
The topology of the last world is kept as `last_topology` (set-up and teardown times).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from reference.clock import Clock
from reference.netns import ns
from reference.netns.topology import DECODE_IP, PREFILL_IP_BASE, Topology
from reference.transport.dp_base import WorkerPool
from reference.transport.kits import Kit
from reference.transport.sockets import UPSTREAM, SocketOptions


def _ready() -> None:
    reason = ns.unavailable()
    if reason:
        raise RuntimeError(f"--transport netns: {reason}")


class NetnsKit(Kit):
    name = "netns"
    last_topology: Topology | None = None
    _waiting: Topology | None = None  # made by `prefill(net=None)`, for the next `network()`

    def _topology(self, stack: ExitStack) -> Topology:
        _ready()
        topology = Topology()
        stack.callback(topology.close)
        NetnsKit.last_topology = topology
        return topology

    def network(
        self,
        stack: ExitStack,
        clock: Clock | None = None,
        sockets: SocketOptions = UPSTREAM,
        watch_peers: bool = False,
    ) -> Any:
        from reference.netns.transport import NetnsTransport

        topology, self._waiting = self._waiting or self._topology(stack), None
        decode = topology.add_host("decode", DECODE_IP)
        net = NetnsTransport(decode.ns, decode.ip, sockets.send_timeout, sockets.immediate,
                             watch_peers=watch_peers)  # fmt: skip
        net.topology = topology  # type: ignore[attr-defined]
        stack.callback(net.close)
        return net

    def prefill(
        self, stack: ExitStack, net: Any, tp_size: int, backend: str = "default", index: int = 0
    ) -> Any:
        from reference.netns.prefill import NetnsPrefill

        if net is None:  # a world that starts its prefill first: the network comes next
            self._waiting = self._waiting or self._topology(stack)
        topology = net.topology if net is not None else self._waiting
        assert topology is not None
        host = topology.add_host(f"prefill-{index}", f"198.18.0.{PREFILL_IP_BASE + index}")
        return stack.enter_context(NetnsPrefill(host, tp_size=tp_size, backend=backend))

    def worker_pool(self, size: int = 2, *, hold_exit_waiters: bool = True) -> WorkerPool:
        from reference.transport.dp_zmq import ZmqWorkerPool

        return ZmqWorkerPool(size, hold_exit_waiters=hold_exit_waiters)

    @contextmanager
    def serving(self, server: Any) -> Iterator[tuple[Any, str]]:
        with ExitStack() as stack:
            net = self.network(stack)
            host = net.topology.add_host("prefill-0", f"198.18.0.{PREFILL_IP_BASE}")
            server.host = host.ip
            with ns.entered(host.ns):  # its listening socket, and its threads, in the prefill host
                server.start()
            stack.callback(server.close)
            yield net, server.address
