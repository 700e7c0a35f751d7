"""What the `netns` kit builds: each host its own network namespace (see `topology.py`).

`reference/transport/kits.py` registers `NetnsKit`, which calls these functions:
`network()` builds a topology (the bridge and a decode host) and returns the decode's
`NetnsTransport`; each `prefill()` adds a host `prefill-<index>` and starts a
`NetnsPrefill` on it; `serving(server)` starts an in-process bootstrap server bound
inside a prefill host's namespace and reaches it from the decode host. Everything is
removed when the stack closes. A world that starts its prefill before its network
(`prefill(net=None)`) gets both on one topology. DP encoder workers are decode-local
processes (same host as their dispatcher, as upstream): the kit gives loopback's pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from reference.netns import ns
from reference.netns.topology import DECODE_IP, PREFILL_IP_BASE, Topology
from reference.transport.sockets import SocketOptions

_waiting: list[Topology] = []  # made by `prefill(net=None)`, for the next `network()`


def _pending() -> Topology | None:
    """The topology a prefill-first world made, if it is still open (its stack may have closed)."""
    while _waiting and not _waiting[-1].namespaces():
        _waiting.pop()
    return _waiting[-1] if _waiting else None


def _topology(stack: ExitStack) -> Topology:
    reason = ns.unavailable()
    if reason:
        raise RuntimeError(f"--transport netns: {reason}")
    topology = Topology()
    stack.callback(topology.close)
    return topology


def network(stack: ExitStack, sockets: SocketOptions, watch_peers: bool) -> Any:
    from reference.netns.transport import NetnsTransport

    topology = _pending() or _topology(stack)
    _waiting.clear()
    decode = topology.add_host("decode", DECODE_IP)
    net = NetnsTransport(decode.ns, decode.ip, sockets.send_timeout, sockets.immediate,
                         watch_peers=watch_peers)  # fmt: skip
    net.topology = topology  # type: ignore[attr-defined]
    stack.callback(net.close)
    return net


def prefill(stack: ExitStack, net: Any, tp_size: int, backend: str, index: int) -> Any:
    from reference.netns.prefill import NetnsPrefill

    if net is None and _pending() is None:  # a world that starts its prefill first: network next
        _waiting.append(_topology(stack))
    topology: Topology = net.topology if net is not None else _waiting[-1]
    host = topology.add_host(f"prefill-{index}", f"198.18.0.{PREFILL_IP_BASE + index}")
    return stack.enter_context(NetnsPrefill(host, tp_size=tp_size, backend=backend))


@contextmanager
def serving(server: Any, sockets: SocketOptions) -> Iterator[tuple[Any, str]]:
    with ExitStack() as stack:
        net = network(stack, sockets, watch_peers=False)
        host = net.topology.add_host("prefill-0", f"198.18.0.{PREFILL_IP_BASE}")
        server.host = host.ip
        with ns.entered(host.ns):  # its listening socket, and its threads, in the prefill host
            server.start()
        stack.callback(server.close)
        yield net, server.address
