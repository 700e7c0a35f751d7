"""One decode rank facing one or more restartable prefills, for the stale-bootstrap checks.

Everything runs in this process on a `ScriptedNetwork` (the mock network with steps at
the receivers' own calls) and a `VirtualClock`; nothing sleeps. A check drives the
variant only through the variant protocol: `KVManager(transport, config, clock)`,
`listen`, `try_ensure_parallel_info`, `KVReceiver(mgr, addr, room)`, `init`,
`send_metadata`, `poll`, `clear`, `bootstrap_infos`, `connection_pool`,
`connection_lock`. What it reads of the cache is what any receiver leaves there: the
ports each key maps to (`ports`, `stale`), never how a variant remembers what it used.

A step scripted at a receiver's call runs through `beside`: now, as another thread
would run at that point, unless the variant holds `connection_lock` there (a variant
that fetches or registers under the lock); then the lock serializes the two, and the
step runs once the current receiver call returned (`drain`), and the check says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import zmq

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.lessons.stale_bootstrap.scripted import ScriptedNetwork, Step
from reference.prefill.mock import MockPrefill
from reference.status import KVPoll
from reference.transport.base import TransportError
from reference.transport.sockets import socket_options

CONFIG = ManagerConfig()  # upstream defaults: 300 s waiting timeout
PAGES = [0, 1]
DONE = (KVPoll.Success, KVPoll.Failed)


class Escaped(Exception):
    """A transport error escaped a receiver call into the caller (the decode scheduler)."""


@dataclass(frozen=True)
class Done:
    """How one whole request ended."""

    room: int
    status: KVPoll
    ports: tuple[int, ...]  # the prefill rank ports it used
    fetches: int  # GET /route for a rank during this request
    reason: str | None


class CheckWorld:
    def __init__(
        self, variant: ModuleType, sockets: str, prefills: int, tp: int, cp: int,
        config: ManagerConfig = CONFIG,
    ) -> None:  # fmt: skip
        self.variant, self.clock = variant, VirtualClock()
        self.net = ScriptedNetwork(self.clock, socket_options(sockets).immediate)
        self.prefills = [
            MockPrefill(self.net, f"10.0.{index}.1:8998", tp_size=tp, cp_size=cp) for index in range(prefills)
        ]
        self.manager = variant.KVManager(self.net, config, self.clock)
        self.manager.listen(KVMemory(regions=tp * cp))
        for prefill in self.prefills:
            if not self.manager.try_ensure_parallel_info(prefill.bootstrap_addr):
                raise RuntimeError(f"prefill {prefill.bootstrap_addr} never answered GET /route")
        self._rooms = itertools.count(1)
        self.deferred: list[Step] = []
        self.serialized = 0  # scripted steps the variant's lock made wait for the current call

    def addr(self, prefill: int = 0) -> str:
        return str(self.prefills[prefill].bootstrap_addr)

    # -- one receiver's calls; a transport error that escapes one is reported, not raised on --
    def open(self, prefill: int = 0) -> Any:
        """A receiver for a new room, constructed and `init`-ed (it finds or fills the cache)."""
        receiver = self.variant.KVReceiver(self.manager, self.addr(prefill), next(self._rooms))
        self._call(f"init of room {receiver.bootstrap_room}", lambda: receiver.init(0))
        return receiver

    def send(self, receiver: Any) -> None:
        if receiver.poll() != KVPoll.Failed:
            room = receiver.bootstrap_room
            self._call(f"send_metadata of room {room}", lambda: receiver.send_metadata(list(PAGES)))

    def settle(self, receiver: Any) -> KVPoll:
        """The request's end: at once, or when its waiting timeout passed (virtual time)."""
        self.net.pump()
        status = KVPoll(receiver.poll())
        if status not in DONE:
            self.clock.advance(CONFIG.waiting_timeout)
            status = KVPoll(receiver.poll())
        return status

    def finish(self, receiver: Any, status: KVPoll, fetched_before: int) -> Done:
        ports = self.used_ports(receiver)
        reason = self.manager.failure_records.get(receiver.bootstrap_room)
        receiver.clear()
        return Done(receiver.bootstrap_room, status, ports, self.net.rank_routes - fetched_before, reason)

    def request(self, prefill: int = 0) -> Done:
        """One whole request: open, send, wait for the end, clear."""
        before = self.net.rank_routes
        receiver = self.open(prefill)
        self.send(receiver)
        return self.finish(receiver, self.settle(receiver), before)

    def _call(self, what: str, call: Callable[[], None]) -> None:
        try:
            call()
        except (TransportError, zmq.ZMQError) as exc:  # ours, or upstream's own socket's (fail-fast: EAGAIN)
            raise Escaped(f"{what} raised {type(exc).__name__}: {exc}") from None
        self.drain()

    # -- scripted steps --------------------------------------------------------------------
    def beside(self, step: Step) -> Step:
        """`step` as another thread would run it at the scripted point (see the module doc)."""

        def run() -> None:
            lock = self.manager.connection_lock
            if lock.acquire(blocking=False):
                lock.release()
                step()
            else:
                self.serialized += 1
                self.deferred.append(step)

        return run

    def drain(self) -> None:
        while self.deferred:
            self.deferred.pop(0)()

    # -- what the cache holds ---------------------------------------------------------------
    def ports(self, prefill: int = 0) -> dict[str, tuple[int, ...]]:
        """Each cached key of this prefill and the rank ports it maps to."""
        addr = self.addr(prefill)
        with self.manager.connection_lock:
            entries = {k: v for k, v in self.manager.connection_pool.items() if str(k).startswith(addr)}
        return {key: tuple(int(info["rank_port"]) for info in infos or ()) for key, infos in entries.items()}

    def stale(self, dead_ports: list[int], prefill: int = 0) -> dict[str, tuple[int, ...]]:
        """The cached keys of this prefill that still name a port in `dead_ports`."""
        return {k: v for k, v in self.ports(prefill).items() if set(v) & set(dead_ports)}

    def used_ports(self, receiver: Any) -> tuple[int, ...]:
        return tuple(int(info["rank_port"]) for info in receiver.bootstrap_infos or ())

    def close(self) -> None:
        self.manager.close()
        self.net.close()


@contextmanager
def check_world(
    variant: ModuleType, sockets: str = "upstream", prefills: int = 1, tp: int = 1, cp: int = 1,
    config: ManagerConfig = CONFIG,
) -> Iterator[CheckWorld]:  # fmt: skip
    world = CheckWorld(variant, sockets, prefills, tp, cp, config)
    try:
        yield world
    finally:
        world.close()


def show(cached: dict[str, tuple[int, ...]]) -> str:
    """`key -> ports 41000, 41001; ...` for a symptom."""
    return (
        "; ".join(f"{key} -> ports {', '.join(map(str, ports))}" for key, ports in cached.items()) or "none"
    )
