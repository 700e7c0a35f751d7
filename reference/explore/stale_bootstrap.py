"""Explorations for lesson `stale-bootstrap` (PR #36029): receivers sharing one cache.

Receivers on several threads share the manager's `connection_pool` and
`connection_lock` (one decode rank, one pool key), against a prefill that restarts
behind the same bootstrap address (`stub_prefill.py`). No hook points. Each worker
is one request: a receiver's `init()` then, unless it failed, `send_metadata()`.

Properties, each a behaviour any correct fix has (the check reads only the pool, the
receivers' `poll()` and `bootstrap_infos`, and exceptions):

- `stale-generation-replaced`: two receivers hold the cached generation when the
  prefill restarts, and the first one's send has failed. Then, concurrently, a new
  request and the second holder's send. No thread raises; the dead port a send failed
  on is not cached at the end; a fresh generation the new request installed and used
  survives the second holder's invalidation (identity, not key).
- `concurrent-fill-then-restart`: two requests fill an empty cache at once; the first
  sends and then restarts the prefill; the second sends its metadata after both
  threads end. Same checks: what a send failed on is not left cached (a receiver that kept its
  own copy instead of adopting the cached winner invalidates that copy and leaves the
  cached one, with the same dead port).
- `invalidation-vs-replacement`: two receivers hold the cached generation when the
  prefill restarts. One thread: the first holder's send (it fails and invalidates);
  the other: the second holder's send (fails, invalidates), then a new request that
  fills the cache with the fresh generation and sends on it. Same checks: no thread
  raises, no failed generation stays cached, and the fresh generation survives the
  first holder's invalidation: an identity check done without `connection_lock`
  (check, then `del` or `pop`) passes before the second holder's delete and the new
  fill, then drops the fresh entry. Preemption bound 1 (a check-then-act needs one).
- `hit-vs-eviction`: a receiver's `init()` looks the key up while the heartbeat evicts
  that prefill (`_handle_node_failure`). No thread raises: lookup and read are one step.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.explore.property import Property, ThreadErrors, Worker
from reference.explore.stub_prefill import ADDR, KEY, StubPrefill
from reference.status import KVPoll


class World(ThreadErrors):
    def __init__(
        self, variant: ModuleType, holders: int = 0, restart: bool = False, first_holder_sends: bool = False
    ) -> None:
        super().__init__()
        # The receiver class, not the module: frontrun walks the state's object graph
        # before every interleaving, and a module would drag every global along.
        self.receiver_class, self.prefill = variant.KVReceiver, StubPrefill()
        self.manager = variant.KVManager(self.prefill, ManagerConfig(), VirtualClock())
        self.manager.listen(KVMemory(regions=1, pages=2, item_len=8))
        assert self.manager.try_ensure_parallel_info(ADDR)
        self.holders = [self._receiver(100 + i) for i in range(holders)]
        for receiver in self.holders:
            receiver.init(0)
        self.pending: list[Any] = []  # receivers whose metadata goes out after the threads end
        self.send_failed: list[int] = []  # ports a send failed on
        self.sent_ok: list[int] = []  # ports a request completed on
        if restart:
            self.prefill.restart()
        if first_holder_sends:
            self.send(self.holders[0])

    def _receiver(self, room: int) -> Any:
        return self.receiver_class(self.manager, ADDR, room)

    def cached_ports(self) -> list[int] | None:
        infos = self.manager.connection_pool.get(KEY)
        return None if infos is None else [info["rank_port"] for info in infos]

    def send(self, receiver: Any) -> None:
        receiver.send_metadata([0])
        ports = [info["rank_port"] for info in receiver.bootstrap_infos or []]
        (self.send_failed if receiver.poll() == KVPoll.Failed else self.sent_ok).extend(ports)

    def finish(self) -> None:
        """Send the pending receivers' metadata (once; the check calls it first)."""
        pending, self.pending = self.pending, []
        for receiver in pending:
            if receiver.poll() != KVPoll.Failed:
                self.send(receiver)

    def request(self, room: int) -> None:
        receiver = self._receiver(room)
        receiver.init(0)
        if receiver.poll() != KVPoll.Failed:
            self.send(receiver)


def _holder_sends(index: int) -> Worker:
    def send(world: World) -> None:
        world.send(world.holders[index])

    return send


def _request(room: int, then_restart: bool = False) -> Worker:
    def request(world: World) -> None:
        world.request(room)
        if then_restart:
            world.prefill.restart()

    return request


def _holder_then_request(world: World) -> None:
    """The second holder's send fails, then a new request runs on the same thread."""
    world.send(world.holders[1])
    world.request(1)


def _init(room: int, send_later: bool = False) -> Worker:
    def init(world: World) -> None:
        receiver = world.receiver_class(world.manager, ADDR, room)
        receiver.init(0)
        if send_later:
            world.pending.append(receiver)

    return init


def heartbeat_evicts(world: World) -> None:
    world.manager._handle_node_failure(ADDR)


def check(world: World) -> list[str]:
    world.finish()
    problems = [f"thread died: {error}" for error in world.errors]
    cached = world.cached_ports() or []
    stale = sorted(set(cached) & set(world.send_failed))
    if stale:
        problems.append(
            f"port {stale[0]} stays cached after {world.send_failed.count(stale[0])} failed send(s) on it"
        )
    fresh = [port for port in world.sent_ok if not world.prefill.is_dead(port)]
    if fresh and fresh[0] not in cached:
        problems.append(
            f"a request succeeded on fresh port {fresh[0]}, but the cache ends with {cached or 'nothing'}"
        )
    return problems


def check_no_errors(world: World) -> list[str]:
    return [f"thread died: {error}" for error in world.errors]


NEEDS = ("KVManager", "KVReceiver")
LESSON = "stale-bootstrap"

PROPERTIES = (
    Property(
        lesson=LESSON,
        id="stale-generation-replaced",
        claim="a failed send's generation leaves the cache; a fresh one another request installed stays",
        needs=NEEDS,
        setup=lambda variant: World(variant, holders=2, restart=True, first_holder_sends=True),
        workers=(("new-request", _request(1)), ("holder-2-send", _holder_sends(1))),
        check=check,
    ),
    Property(
        lesson=LESSON,
        id="concurrent-fill-then-restart",
        claim="two requests filling the cache around a restart leave no failed generation cached",
        needs=NEEDS,
        setup=World,
        workers=(
            ("request-1-then-restart", _request(1, then_restart=True)),
            ("request-2-init", _init(2, send_later=True)),
        ),
        check=check,
        bound=1,  # unbounded: over 600 interleavings, not done in 60 s
    ),
    Property(
        lesson=LESSON,
        id="invalidation-vs-replacement",
        claim="two holders invalidating a failed generation around a new request's fill raise nothing, "
        "leave no failed generation cached and keep the fresh one",
        needs=NEEDS,
        setup=lambda variant: World(variant, holders=2, restart=True),
        workers=(("holder-1-send", _holder_sends(0)), ("holder-2-send-then-request", _holder_then_request)),
        check=check,
        bound=1,  # unbounded: over 1000 interleavings on fixed, not done in 30 s
    ),
    Property(
        lesson=LESSON,
        id="hit-vs-eviction",
        claim="a cache lookup racing the heartbeat's eviction raises nothing",
        needs=(*NEEDS, "KVManager._handle_node_failure"),
        setup=lambda variant: World(variant, holders=1),
        workers=(("receiver-init", _init(1)), ("heartbeat-evicts", heartbeat_evicts)),
        check=check_no_errors,
    ),
)
