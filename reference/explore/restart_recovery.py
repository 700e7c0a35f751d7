"""Exploration for lesson `restart-recovery` (HARDEN(restart-recovery)): a peer loss
against a receiver dropping the same cached generation.

The manager learns of a dead prefill rank from the transport (`_on_peer_gone(endpoint)`,
called on the transport's thread when a socket's peer goes away) and drops every cached
generation that sends to it. A receiver whose send to that rank just failed drops the
generation it used too (`invalidate_cached_bootstrap_infos`). Both delete the same
`connection_pool` key; they race. The world is `stale_bootstrap`'s (a stub prefill on
the receivers' thread, no hook points): one receiver holds the cached generation, the
prefill restarts behind the same bootstrap address, then, concurrently, the holder's
send and the peer-loss callback for the dead rank.

Property `peer-gone-vs-invalidation`: no thread raises, and the dead rank's port is not
cached once both are done. A deletion that checks the key and deletes it in two steps
(or deletes without `connection_lock`, against one that checks and deletes under it)
raises KeyError when the other thread's delete falls between the two.

Property `resend-avoids-dead-peer`: the callback also marks the requests that sent to
the dead rank (`lost_peer`), and each resends on its next poll, through a generation
looked up afresh. World: three requests sent through the cached generation; the third
ended after its waiting timeout, dropping that generation (as `_check_waiting_timeout`
does), and a new request cached an equal one for the same, still live, rank; then the
rank dies (restart, new port). Concurrently: the callback for the dead rank; the
scheduler polling the second request, then the first (whose own recorded generation is
no longer the cached one, so its invalidation leaves the cached one alone). No thread
raises and no send fails: a resend after the loss was reported never goes out through a
generation naming the dead rank. A callback that marks the requests before it drops
the dead generations lets a poll in between resend through it (the send fails, the
request waits for a successor it already had).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from reference.explore.property import Property
from reference.explore.stale_bootstrap import World, check
from reference.explore.stub_prefill import RANK_IP, StubSocket
from reference.status import KVPoll
from reference.transport.base import TransportError


class PeerLossWorld(World):
    """One receiver holds the cached generation; then the prefill restarts (new port)."""

    def __init__(self, variant: ModuleType) -> None:
        super().__init__(variant, holders=1)
        self.dead_port = self.prefill.port
        self.prefill.restart()


def holder_sends(world: PeerLossWorld) -> None:
    world.send(world.holders[0])


def peer_gone(world: PeerLossWorld) -> None:
    world.manager._on_peer_gone(f"tcp://{RANK_IP}:{world.dead_port}")


class ResendWorld(World):
    """Requests 100 and 101 wait on the cached generation, which is not 100's own any more."""

    def __init__(self, variant: ModuleType) -> None:
        super().__init__(variant, holders=3)
        for holder in self.holders:
            holder.send_metadata([0])
            if holder.poll() != KVPoll.WaitingForInput:
                raise RuntimeError(f"room {holder.bootstrap_room} does not wait after its send")
        ended = self.holders[2]  # its waiting timeout drops the generation it used, then it ends
        ended.invalidate_cached_bootstrap_infos()
        ended.clear()
        self._cache_equal_generation(200)  # a new request, the rank still live
        self.dead_port = self.prefill.port
        self.prefill.restart()
        self.failed_sends: list[int] = []  # written only when a send fails
        self.prefill.connect = self._connect  # type: ignore[method-assign]

    def _cache_equal_generation(self, room: int) -> None:
        receiver = self._receiver(room)
        receiver.init(0)
        receiver.poll()

    def _connect(self, endpoint: str) -> StubSocket:
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        return _Recorded(self, host, int(port))


class _Recorded(StubSocket):
    def __init__(self, world: ResendWorld, ip: str, port: int) -> None:
        super().__init__(world.prefill, ip, port)
        self.world = world

    def send(self, frames: Any) -> None:
        try:
            super().send(frames)
        except TransportError:
            self.world.failed_sends.append(self.port)
            raise


def scheduler_polls(world: ResendWorld) -> None:
    for holder in (world.holders[1], world.holders[0]):
        holder.poll()


def peer_gone_resend(world: ResendWorld) -> None:
    world.manager._on_peer_gone(f"tcp://{RANK_IP}:{world.dead_port}")


def check_resend(world: ResendWorld) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    if world.failed_sends:
        ports = sorted(set(world.failed_sends))
        problems.append(
            f"a resend after the peer loss went to the dead rank: send failed on port(s) {ports} "
            f"(dead: {world.dead_port})"
        )
    return problems


PROPERTIES = (
    Property(
        lesson="restart-recovery",
        id="peer-gone-vs-invalidation",
        claim="a peer-loss callback and a failed send dropping the same cached generation raise nothing "
        "and leave the dead port uncached",
        needs=("KVManager", "KVReceiver", "KVManager._on_peer_gone"),
        setup=PeerLossWorld,
        workers=(("holder-send", holder_sends), ("peer-gone", peer_gone)),
        check=check,
        hardened_only=True,  # buggy and fixed have no peer-loss callback
    ),
    Property(
        lesson="restart-recovery",
        id="resend-avoids-dead-peer",
        claim="a request resending after a reported peer loss never sends through the dead rank's generation",
        needs=("KVManager", "KVReceiver", "KVManager._on_peer_gone"),
        setup=ResendWorld,
        workers=(("peer-gone", peer_gone_resend), ("scheduler-polls", scheduler_polls)),
        check=check_resend,
        bound=1,  # exhaustive: 70 interleavings, 1 s on hardened; the kill needs one preemption
        hardened_only=True,
    ),
)
