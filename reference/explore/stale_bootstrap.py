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
- `fill-vs-other-eviction` (bound 2): a request fills the cache for a second prefill
  (`OTHER_ADDR`, another entry of it cached) while the heartbeat evicts the first. No
  thread raises: the eviction walks the pool, and an insertion during that walk raises
  RuntimeError. The pool is a `SeenPool`, whose steps the explorer sees (below).
- `invalidation-vs-other-eviction` (bound 1): the heartbeat evicts `OTHER_ADDR` while
  the holder of `ADDR`'s entry sends to the restarted prefill and invalidates it (a
  deletion during the eviction's walk raises RuntimeError). Same checks as
  `stale-generation-replaced`.
- `cp-rank-route-fails`, `cp-rank-refuses`: one request to a CP-2 prefill whose CP rank 1
  never answers its route (503), or answers and refuses every send; the request polls
  past the waiting timeout. It ends Failed with nothing it fetched cached; with the route
  failing, also nothing cached after any of its calls, and no rank got its metadata (a
  refused registration goes unreported on upstream's sockets, so only the end counts
  there). One thread (one interleaving): the point is the world, a CP rank failing after
  an earlier one was cached.
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
        self,
        variant: ModuleType,
        holders: int = 0,
        restart: bool = False,
        first_holder_sends: bool = False,
        prefill: StubPrefill | None = None,
    ) -> None:
        super().__init__()
        # The receiver class, not the module: frontrun walks the state's object graph
        # before every interleaving, and a module would drag every global along.
        self.receiver_class, self.prefill = variant.KVReceiver, prefill or StubPrefill()
        self.manager = variant.KVManager(self.prefill, ManagerConfig(), VirtualClock())
        self.manager.listen(KVMemory(regions=self.prefill.cp, pages=2, item_len=8))  # a region per CP rank
        assert self.manager.try_ensure_parallel_info(ADDR)
        self.holders = [self._receiver(100 + i) for i in range(holders)]
        for receiver in self.holders:
            receiver.init(0)
        self.ended: dict[int, KVPoll] = {}  # room -> its last poll (CP requests)
        self.cached_between: list[str] = []  # the first entry a failed setup left cached (CP requests)
        self.pending: list[Any] = []  # receivers whose metadata goes out after the threads end
        self.send_failed: list[int] = []  # ports a send failed on
        self.sent_ok: list[int] = []  # ports a request completed on
        if restart:
            self.prefill.restart()
        if first_holder_sends:
            self.send(self.holders[0])

    def _receiver(self, room: int) -> Any:
        return self.receiver_class(self.manager, ADDR, room)

    def note_cached(self, after: str) -> None:
        """What the pool holds between a lone request's calls (CP worlds: no setup completes)."""
        if self.manager.connection_pool and not self.cached_between:
            self.cached_between.append(f"{', '.join(sorted(self.manager.connection_pool))} after {after}")

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


class SeenPool(dict):
    """The connection pool with its iteration in Python, each step a read of the pool.

    frontrun reports a `for key in pool` (a comprehension's, on Python 3.11) as one read at
    `GET_ITER`, never its steps, so DPOR would never put another thread's insertion between
    two of them (the insertion then raises RuntimeError in the iteration). Here each step
    reads `self[key]`, which the explorer sees; what the iteration yields, and what an
    insertion during it does, are a dict's.
    """

    def __iter__(self) -> Any:
        for key in dict.__iter__(self):
            self[key]  # the read the explorer sees
            yield key


OTHER_ADDR = "10.0.0.3:8998"  # a second prefill behind its own bootstrap address (same stub)


def other_prefill_world(variant: ModuleType, holders: int = 0, restart: bool = False) -> World:
    """One entry of `OTHER_ADDR` cached (dp 1), after `holders` of `ADDR`'s; the pool's
    iteration visible (`SeenPool`)."""
    world = World(variant, holders=holders)
    if type(world.manager.connection_pool) is dict:
        world.manager.connection_pool = SeenPool(world.manager.connection_pool)
    assert world.manager.try_ensure_parallel_info(OTHER_ADDR)
    holder = world.receiver_class(world.manager, OTHER_ADDR, 200)  # a room of its own
    holder.init(1)
    world.holders.append(holder)
    if restart:
        world.prefill.restart()
    return world


def heartbeat_evicts_other(world: World) -> None:
    world.manager._handle_node_failure(OTHER_ADDR)


def _other_prefill_fill(world: World) -> None:
    world.receiver_class(world.manager, OTHER_ADDR, 1).init(0)


POLLS, POLL_STEP = 8, 60.0  # a request polls every POLL_STEP virtual seconds, at most POLLS times


def cp_world(route_fails: int | None = None, refuses: int | None = None) -> Any:
    def setup(variant: ModuleType) -> World:
        return World(variant, prefill=StubPrefill(cp=2, route_fails=route_fails, refuses=refuses))

    return setup


def _cp_request(room: int) -> Worker:
    """A request to the CP-2 prefill: `init()`, its metadata unless that failed, then
    `poll()` every POLL_STEP virtual seconds until it ends (past the waiting timeout)."""

    def request(world: World) -> None:
        receiver = world._receiver(room)
        receiver.init(0)
        world.note_cached("init()")
        if receiver.poll() != KVPoll.Failed:
            receiver.send_metadata([0])
        for step in range(POLLS):
            if receiver.poll() in (KVPoll.Failed, KVPoll.Success):
                break
            world.note_cached(f"poll {step + 1}")
            world.manager.clock.advance(POLL_STEP)
        world.ended[room] = receiver.poll()

    return request


def check_cp_rank_failed(world: World) -> list[str]:
    """CP rank 1's route never answers: the request Failed, nothing it fetched cached
    after any of its calls, and no rank asked to transfer (metadata to part of them)."""
    problems = check_cp_rank_refused(world)
    if world.cached_between and not world.manager.connection_pool:
        problems.append(f"a failed setup left its generation cached: {world.cached_between[0]}")
    if world.prefill.metadata_to:
        ports = sorted(set(world.prefill.metadata_to))
        problems.append(f"metadata reached port(s) {ports} though a CP rank never answered")
    return problems


def check_cp_rank_refused(world: World) -> list[str]:
    """CP rank 1 refuses every send: the request Failed and nothing it fetched cached at
    its end. Only the end: upstream's sockets never report a lost registration (the
    request then sends its metadata and ends at the waiting timeout)."""
    problems = check_no_errors(world)
    for room, status in sorted(world.ended.items()):
        if status != KVPoll.Failed:
            problems.append(f"room {room} ends {status.name}, not Failed, with a CP rank unreachable")
    cached = sorted(world.manager.connection_pool)
    if cached:
        problems.append(f"every request failed, but the cache keeps {', '.join(cached)}")
    return problems


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
    Property(
        lesson=LESSON,
        id="invalidation-vs-other-eviction",
        claim="a failed send's invalidation racing the heartbeat's eviction of another prefill "
        "raises nothing and leaves no failed generation cached",
        needs=(*NEEDS, "KVManager._handle_node_failure"),
        setup=lambda variant: other_prefill_world(variant, holders=1, restart=True),
        workers=(("heartbeat-evicts-other", heartbeat_evicts_other), ("holder-send", _holder_sends(0))),
        check=check,
        bound=1,  # kills at bound 1; exhaustive: 12 interleavings on fixed, 8 on hardened
    ),
    Property(
        lesson=LESSON,
        id="fill-vs-other-eviction",
        claim="a request filling the cache for one prefill while the heartbeat evicts another raises nothing",
        needs=(*NEEDS, "KVManager._handle_node_failure"),
        setup=other_prefill_world,
        workers=(("other-prefill-fill", _other_prefill_fill), ("heartbeat-evicts", heartbeat_evicts)),
        check=check_no_errors,
        bound=2,  # the fill must land inside the eviction's iteration, itself after the fill's init
    ),
    Property(
        lesson=LESSON,
        id="cp-rank-route-fails",
        claim="with CP rank 1's route failing, the request ends Failed, caches nothing and sends no metadata",
        needs=NEEDS,
        setup=cp_world(route_fails=1),
        workers=(("request", _cp_request(1)),),
        check=check_cp_rank_failed,
    ),
    Property(
        lesson=LESSON,
        id="cp-rank-refuses",
        claim="with CP rank 1 refusing every send, the request ends Failed and leaves nothing cached",
        needs=NEEDS,
        setup=cp_world(refuses=1),
        workers=(("request", _cp_request(1)),),
        check=check_cp_rank_refused,
    ),
)
