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
"""

from __future__ import annotations

from types import ModuleType

from reference.explore.property import Property
from reference.explore.stale_bootstrap import World, check
from reference.explore.stub_prefill import RANK_IP


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
)
