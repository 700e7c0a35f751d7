"""The mock network with steps scripted at the control plane's own calls.

The stale-bootstrap checks must order several receivers around a prefill restart on
any variant, including upstream's own receiver, which fires none of our hook points.
So the interleaving points are the calls every receiver makes through its transport:
`GET /route` (a fill's fetch), `connect` (just before a registration or metadata send,
outside any socket lock) and the delivery of a message. `ScriptedNetwork.at(...)` runs
a step once, at the first matching call, on the caller's thread: exactly what another
thread could do at that moment, made deterministic.

`aborts` counts the ABORT messages sent to a bound endpoint, per (endpoint, room): what
each live prefill rank was told to drop. A connect to a `refused` endpoint raises the
simulation's `ConnectRefused` (EMFILE: both our `TransportError` and a `zmq.ZMQError`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reference import wire
from reference.clock import Clock
from reference.sim.notices import ConnectRefused
from reference.transport.base import Reply
from reference.transport.mock import MockNetwork, MockPushSocket

Step = Callable[[], None]


@dataclass
class _Scripted:
    call: str  # "route", "connect" or "send"
    step: Step
    after: bool
    addr: str | None
    cp: int | None
    tag: bytes | None
    endpoint: str | None

    def matches(self, call: str, after: bool, facts: Mapping[str, Any]) -> bool:
        wanted = {"addr": self.addr, "cp": self.cp, "tag": self.tag, "endpoint": self.endpoint}
        return (call, after) == (self.call, self.after) and all(
            value is None or facts.get(name) == value for name, value in wanted.items()
        )


class ScriptedNetwork(MockNetwork):
    def __init__(self, clock: Clock, immediate: bool) -> None:
        super().__init__(clock, immediate=immediate)
        self._script: list[_Scripted] = []
        self.refused: set[str] = set()  # endpoints whose connect raises ConnectRefused
        self.connect_refusals = 0
        self.rank_routes = 0  # GET /route for one rank (the parallel-info GET not counted)
        self.aborts: Counter[tuple[str, int]] = Counter()  # ABORTs delivered, per (endpoint, room)

    def at(self, call: str, step: Step, *, after: bool = False, addr: str | None = None,
           cp: int | None = None, tag: bytes | None = None, endpoint: str | None = None) -> None:  # fmt: skip
        """Run `step` once, at the first `call` ("route", "connect", "send") that matches,
        before it happens (or, `after=True`, once it returned)."""
        self._script.append(_Scripted(call, step, after, addr, cp, tag, endpoint))

    @property
    def pending(self) -> int:
        """Scripted steps that never ran (their call never came)."""
        return len(self._script)

    def _fire(self, call: str, after: bool, **facts: Any) -> None:
        for scripted in self._script:
            if scripted.matches(call, after, facts):
                self._script.remove(scripted)
                scripted.step()
                return

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        rank = int(params.get("target_tp_rank", -1)) >= 0
        if not rank:
            return super().get_route(bootstrap_addr, params)
        self.rank_routes += 1
        facts = {"addr": bootstrap_addr, "cp": int(params.get("prefill_cp_rank", -1))}
        self._fire("route", False, **facts)
        reply = super().get_route(bootstrap_addr, params)
        self._fire("route", True, **facts)
        return reply

    def connect(self, endpoint: str) -> MockPushSocket:
        self._fire("connect", False, endpoint=endpoint)
        if endpoint in self.refused:
            self.connect_refusals += 1
            raise ConnectRefused(endpoint)
        return super().connect(endpoint)

    def deliver(self, endpoint: str, frames: list[bytes]) -> None:
        self._fire("send", False, endpoint=endpoint, tag=frames[0] if frames else None)
        if frames and frames[0] == wire.ABORT and self.is_bound(endpoint):
            self._count_abort(endpoint, frames)
        super().deliver(endpoint, frames)

    def _count_abort(self, endpoint: str, frames: list[bytes]) -> None:
        try:
            message = wire.decode(frames)
        except ValueError:
            return  # a malformed ABORT tells the rank nothing
        if isinstance(message, wire.Abort):
            self.aborts[(endpoint, message.room)] += 1
