"""Two prefill instances a decode heartbeat watches, on the mock or the loopback transport.

`live-set-race` needs two prefills whose `/health` answers until the scenario kills
them. On the mock they are two addresses the `MockNetwork` marks alive; on loopback
they are two real prefill processes (one rank each) whose real bootstrap servers the
heartbeat probes over HTTP, and a kill is a SIGKILL. Both are closed when the `with`
block ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

MOCK_ADDRS = ("10.0.0.1:8998", "10.0.0.2:8998")


@dataclass(frozen=True)
class PrefillPair:
    transport: Any
    addrs: tuple[str, str]
    kill: Callable[[str], None]


@contextmanager
def two_prefills(transport: str) -> Iterator[PrefillPair]:
    if transport == "mock":
        from reference.transport.mock import MockNetwork

        net = MockNetwork()
        for addr in MOCK_ADDRS:
            net.add_prefill(addr)
        yield PrefillPair(net, MOCK_ADDRS, net.kill)
        return
    from reference.prefill.loopback import LoopbackPrefill
    from reference.transport.loopback import LoopbackTransport

    with ExitStack() as stack:
        prefills = [stack.enter_context(LoopbackPrefill(tp_size=1)) for _ in MOCK_ADDRS]
        loopback = LoopbackTransport()
        stack.callback(loopback.close)
        by_addr = {prefill.bootstrap_addr: prefill for prefill in prefills}
        first, second = by_addr
        yield PrefillPair(loopback, (first, second), lambda addr: by_addr[addr].kill())
