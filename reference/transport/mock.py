"""The in-process mock network: deterministic, no sockets, faults by name.

A `MockNetwork` stands in for everything `LoopbackTransport` does with real sockets:

- `health` answers for bootstrap addresses marked alive (`add_prefill`, `kill`, `revive`);
  `HealthNetwork` scripts the answers too (an error status, a late connect or answer);
- `get_route` calls the bootstrap server's route logic (`serve(addr, table.handle)`), the
  very `BootstrapTable.handle` the aiohttp server wraps, and so does `register_dp_rank`;
- `bind` gives a handler an endpoint on a fresh port (so a restarted prefill gets new
  ones), or on a port it names (a restart on the same ports); `connect` returns a cached
  PUSH socket whose `send` calls the bound handler synchronously, on the caller's thread;
- `register_memory` is the memcpy data plane's registry.

Faults, each a plain call: `kill`/`unbind` (a send to an endpoint nobody is bound to
raises `TransportError` with `immediate=True`, as a fail-fast socket's send does once
its send timeout expires, no virtual time passing; with `immediate=False`, upstream's
socket option, it vanishes without an error and is counted in `queued_to_dead`),
`drop(...)` (the next matching messages vanish) and `delay(seconds, ...)`
(they are held until `pump()` runs at or after their due time on the injected clock);
`latency` holds every message that way, and `hold(endpoint, until)` every message
to one endpoint until a time (a paused process). A held message reaches only the process
it was sent to: one that dies or restarts meanwhile, on new ports or the same, loses it.
A rule matches by endpoint and/or by first frame (the message tag). Nothing here
blocks or reads wall time.

Peer loss: `unbind` of an endpoint this side has a PUSH socket to is what a real TCP
connection reports when the peer process dies; it counts in `peers_gone` and calls every
`on_peer_gone` callback with the endpoint, synchronously (the loopback transport does
the same from a ZMQ socket monitor).
"""

from __future__ import annotations

import heapq
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reference.clock import Clock
from reference.transport.base import Frames, Handler, Reply, TransportError

FIRST_PORT = 41000
DROPPED = -1.0  # `_due` of a message a fault drops
PROBE_TIMEOUT = (2.0, 3.0)  # the decode's GET /health: seconds to connect, then to answer


@dataclass
class _Fault:
    kind: str  # "drop" or "delay"
    count: int
    endpoint: str | None = None
    tag: bytes | None = None
    seconds: float = 0.0

    def matches(self, endpoint: str, frames: list[bytes]) -> bool:
        return (self.endpoint in (None, endpoint)) and (self.tag is None or frames[:1] == [self.tag])


class MockPushSocket:
    def __init__(self, net: MockNetwork, endpoint: str) -> None:
        self.net, self.endpoint = net, endpoint
        self.lock = threading.Lock()

    def send(self, frames: Frames) -> None:
        self.net.deliver(self.endpoint, list(frames))


class MockNetwork:
    def __init__(self, clock: Clock | None = None, immediate: bool = True) -> None:
        self.clock, self.immediate = clock, immediate
        self._alive: set[str] = set()
        self._servers: dict[str, Any] = {}
        self._endpoints: dict[str, Handler] = {}
        self._sockets: dict[str, MockPushSocket] = {}
        self._faults: list[_Fault] = []
        self._held: dict[str, float] = {}  # endpoint -> clock time its messages are held until
        # (due, order, endpoint, frames, the handler it was sent to): a held message reaches
        # only the process it was sent to; one that died (or restarted on the port) loses it
        self._pending: list[tuple[float, int, str, list[bytes], Handler]] = []
        self._seq = itertools.count()
        self._ports = itertools.count(FIRST_PORT)
        self._lock = threading.RLock()
        self.memory: dict[str, Any] = {}
        self.health_probes = 0
        self.route_fetches = 0
        self.send_failures = 0
        self.latency = 0.0  # > 0: every message is held this long on the clock, unless a fault says otherwise
        self.queued_to_dead = 0  # immediate=False: sends to an endpoint nobody is bound to
        self.dropped = 0
        self.disconnected: list[str] = []
        self.peers_gone = 0
        self._peer_gone_callbacks: list[Callable[[str], None]] = []

    # -- bootstrap servers ---------------------------------------------------------------
    def add_prefill(self, bootstrap_addr: str) -> None:
        self._alive.add(bootstrap_addr)

    def kill(self, bootstrap_addr: str) -> None:
        self._alive.discard(bootstrap_addr)

    def revive(self, bootstrap_addr: str) -> None:
        self._alive.add(bootstrap_addr)

    def serve(self, bootstrap_addr: str, handle: Any) -> None:
        """Route HTTP for `bootstrap_addr` to `handle(method, path, query, body)`."""
        self._servers[bootstrap_addr] = handle

    def unserve(self, bootstrap_addr: str) -> None:
        self._servers.pop(bootstrap_addr, None)

    def health(self, bootstrap_addr: str) -> bool:
        self.health_probes += 1
        return bootstrap_addr in self._alive

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        self.route_fetches += 1
        handle = self._servers.get(bootstrap_addr)
        if handle is None or bootstrap_addr not in self._alive:
            raise TransportError(f"GET http://{bootstrap_addr}/route: connection refused")
        reply: Reply = handle("GET", "/route", {k: str(v) for k, v in params.items()}, b"")
        return reply

    def register_dp_rank(self, bootstrap_addr: str, room: int, dp_rank: int) -> Reply:
        handle = self._servers.get(bootstrap_addr)
        if handle is None or bootstrap_addr not in self._alive:
            raise TransportError(f"POST http://{bootstrap_addr}/register_dp_rank: connection refused")
        body = json.dumps({"bootstrap_room": room, "dp_rank": dp_rank}).encode()
        reply: Reply = handle("POST", "/register_dp_rank", {}, body)
        return reply

    # -- endpoints and PUSH sockets ------------------------------------------------------------
    def bind(self, handler: Handler, ip: str = "127.0.0.1", port: int | None = None) -> str:
        """Bind `handler` on a fresh port, or on `port` (a restart that reuses its ports)."""
        endpoint = f"tcp://{ip}:{next(self._ports) if port is None else port}"
        with self._lock:
            self._endpoints[endpoint] = handler
        return endpoint

    def unbind(self, endpoint: str) -> None:
        with self._lock:
            self._endpoints.pop(endpoint, None)
            connected = endpoint in self._sockets
            if connected:
                self.peers_gone += 1
            callbacks = list(self._peer_gone_callbacks) if connected else []
        for callback in callbacks:
            callback(endpoint)

    def is_bound(self, endpoint: str) -> bool:
        """Whether a handler is bound at `endpoint` now (the upstream adapter's relays)."""
        with self._lock:
            return endpoint in self._endpoints

    def on_peer_gone(self, callback: Callable[[str], None]) -> None:
        """Call `callback(endpoint)` when the peer of a connected PUSH socket goes away."""
        with self._lock:
            self._peer_gone_callbacks.append(callback)

    def bind_inbox(self, handler: Handler) -> str:
        return self.bind(handler).removeprefix("tcp://")

    def register_memory(self, session: str, memory: Any) -> None:
        self.memory[session] = memory

    def connect(self, endpoint: str) -> MockPushSocket:
        with self._lock:
            sock = self._sockets.get(endpoint)
            if sock is None:
                sock = self._sockets[endpoint] = MockPushSocket(self, endpoint)
            return sock

    def disconnect(self, endpoint: str) -> None:
        with self._lock:
            self.disconnected.append(endpoint)
            self._sockets.pop(endpoint, None)

    def deliver(self, endpoint: str, frames: list[bytes]) -> None:
        """Send one message; faults apply. TransportError when nobody is bound there."""
        with self._lock:
            handler = self._endpoints.get(endpoint)
            if handler is None and not self.immediate:
                self.queued_to_dead += 1  # upstream IMMEDIATE=0: queued for a peer that never comes
                return
            if handler is None:
                self.send_failures += 1
                raise TransportError(f"send to {endpoint}: Resource temporarily unavailable (send timed out)")
            due = self._due(endpoint, frames)
            if due == DROPPED:
                self.dropped += 1
                return
            if due is not None:
                heapq.heappush(self._pending, (due, next(self._seq), endpoint, frames, handler))
                return
        handler(frames)  # outside the lock: the handler may send in turn

    # -- faults ---------------------------------------------------------------------------
    def drop(self, count: int = 1, endpoint: str | None = None, tag: bytes | None = None) -> None:
        with self._lock:
            self._faults.append(_Fault("drop", count, endpoint, tag))

    def delay(
        self, seconds: float, count: int = 1, endpoint: str | None = None, tag: bytes | None = None
    ) -> None:
        if self.clock is None:
            raise ValueError("delay needs a MockNetwork built with a clock")
        with self._lock:
            self._faults.append(_Fault("delay", count, endpoint, tag, seconds))

    def heal(self) -> None:
        """Forget every drop and delay rule not used yet, and every hold (held messages stay due)."""
        with self._lock:
            self._faults.clear()
            self._held.clear()

    def hold(self, endpoint: str, until: float) -> None:
        """Hold every message to `endpoint` sent before `until` (clock time) until then (a pause)."""
        with self._lock:
            self._held[endpoint] = max(until, self._held.get(endpoint, 0.0))

    def _due(self, endpoint: str, frames: list[bytes]) -> float | None:
        """When a message sent now is delivered: now (None), later, or never (DROPPED)."""
        now = self._now()
        if self._held.get(endpoint, now) > now:
            return self._held[endpoint]
        fault = self._take_fault(endpoint, frames)
        if fault is not None:
            return DROPPED if fault.kind == "drop" else now + fault.seconds
        return now + self.latency if self.latency else None

    def _take_fault(self, endpoint: str, frames: list[bytes]) -> _Fault | None:
        for fault in self._faults:
            if fault.count > 0 and fault.matches(endpoint, frames):
                fault.count -= 1
                return fault
        return None

    def _now(self) -> float:
        return self.clock.now() if self.clock is not None else 0.0

    def next_due(self) -> float | None:
        """When the earliest held message is due (None: nothing is held)."""
        with self._lock:
            return self._pending[0][0] if self._pending else None

    def pump(self) -> int:
        """Deliver every delayed message that is due; a dead endpoint loses it, and so does one
        rebound since (a restart on the same port: the message travelled on the old process's
        connection, which died with it). Returns how many."""
        delivered = 0
        while True:
            with self._lock:
                if not self._pending or self._pending[0][0] > self._now():
                    return delivered
                _, _, endpoint, frames, sent_to = heapq.heappop(self._pending)
                handler = self._endpoints.get(endpoint)
            if handler is not None and handler is sent_to:
                handler(frames)
                delivered += 1

    def close(self) -> None:
        with self._lock:
            self._alive.clear()
            self._servers.clear()
            self._endpoints.clear()
            self._sockets.clear()
            self._pending.clear()


@dataclass(frozen=True)
class Answer:
    """A `/health` answer: its status, and how long the connect and the answer take."""

    status: int = 200
    connect: float = 0.0
    read: float = 0.0

    @property
    def missed(self) -> bool:
        """A miss for a probe with PROBE_TIMEOUT, as the loopback transport's GET /health."""
        return self.status != 200 or self.connect > PROBE_TIMEOUT[0] or self.read > PROBE_TIMEOUT[1]

    def __str__(self) -> str:
        timed = (("connects", self.connect), ("answers", self.read))
        late = [f"{what} after {seconds:g} s" for what, seconds in timed if seconds]
        return f"{self.status}" + (f" ({', '.join(late)})" if late else "")


class HealthNetwork(MockNetwork):
    """The mock network whose prefills answer `/health` probes as scripted (`script`): each
    probing thread (a decode's heartbeat) gets the script's answers in turn, then 200s (and
    200s once its `until`, clock time, passed). A
    variant on our transport asks `health(addr)`; the upstream adapter asks
    `health_answer(addr)` and applies upstream's own `timeout` to it
    (`reference/upstream/bound.py`). A late answer costs no virtual time: the probe gives up
    at its timeout. `on_probe(addr, answer)` sees every probe, on the probing thread.
    `mute(endpoint, until)`: a process that unwell loses what is sent to it meanwhile."""

    def __init__(self, clock: Clock | None = None, immediate: bool = True) -> None:
        super().__init__(clock, immediate)
        # addr -> (answers, until when, thread -> how many it took)
        self._scripts: dict[str, tuple[list[Answer], float, dict[int, int]]] = {}
        self.on_probe: Callable[[str, Answer | None], None] | None = None
        self._muted: dict[str, float] = {}  # endpoint -> clock time until which messages to it are lost

    def script(self, addr: str, answers: Iterable[Answer], until: float = float("inf")) -> None:
        self._scripts[addr] = (list(answers), until, {})

    def health_answer(self, addr: str) -> Answer | None:
        """This thread's next answer from `addr`; None: the connection is refused (it is gone)."""
        self.health_probes += 1
        answers, until, taken = self._scripts.get(addr, ([], 0.0, {}))
        turn = taken[threading.get_ident()] = taken.get(threading.get_ident(), 0) + 1
        scripted = turn <= len(answers) and self._now() < until
        answer = None if addr not in self._alive else answers[turn - 1] if scripted else Answer()
        if self.on_probe is not None:
            self.on_probe(addr, answer)
        return answer

    def health(self, bootstrap_addr: str) -> bool:
        answer = self.health_answer(bootstrap_addr)
        return answer is not None and not answer.missed

    def mute(self, endpoint: str, until: float) -> None:
        with self._lock:
            self._muted[endpoint] = max(until, self._muted.get(endpoint, 0.0))

    def _due(self, endpoint: str, frames: list[bytes]) -> float | None:
        return DROPPED if self._muted.get(endpoint, 0.0) > self._now() else super()._due(endpoint, frames)

    def heal(self) -> None:
        super().heal()
        self._scripts.clear()
        self._muted.clear()
