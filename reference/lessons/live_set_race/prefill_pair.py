"""Two prefill instances a decode heartbeat watches, on the mock or the loopback transport.

`live-set-race` needs two prefills whose `/health` answers until the scenario kills
them. On the mock they are two in-process prefills (one rank each) on one `MockNetwork`; on loopback
they are two real prefill processes (one rank each) whose real bootstrap servers the
heartbeat probes over HTTP, and a kill is a SIGKILL. Both are closed when the `with`
block ends, however it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from reference.transport.kits import kit


@dataclass(frozen=True)
class PrefillPair:
    transport: Any
    addrs: tuple[str, str]
    kill: Callable[[str], None]


@contextmanager
def two_prefills(transport: str) -> Iterator[PrefillPair]:
    chosen = kit(transport)
    with ExitStack() as stack:
        net = chosen.network(stack)
        prefills = [chosen.prefill(stack, net, tp_size=1, index=i) for i in range(2)]
        by_addr = {prefill.bootstrap_addr: prefill for prefill in prefills}
        first, second = by_addr
        yield PrefillPair(net, (first, second), lambda addr: by_addr[addr].kill())
