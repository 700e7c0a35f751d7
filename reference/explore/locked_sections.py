"""Explorations narrowed to one locked section of the receivers' cache and its racing partner.

The lesson properties (`stale_bootstrap.py`) run whole requests, and on upstream's code
(`--sglang`) every request runs upstream's receivers, relays and real sockets: their
exhaustive and bound-2 searches stop at the 30 s bound there (`unknown`). The upstream
mutation's lock stage (`reference/upstream/mutate.py`, `--explore-locks`) needs an
exploration that decides whether a removed `connection_lock` is ever contended, so each
property here runs two threads and nothing else: the section `connection_lock` guards
in one of upstream's methods, and the one other section that can split it.

- `invalidation-vs-eviction`: a holder's `invalidate_cached_bootstrap_infos()` (an
  identity check, then `del`) against the heartbeat's `_handle_node_failure(addr)` of
  the same prefill (it collects the prefill's keys, reads each entry, deletes it). Each
  must check and delete in one locked step: either one without the lock lets the other
  delete the key between its check and its `del` (or its read), and the thread raises
  KeyError. No thread raises; nothing of the dead prefill stays cached.
- `fill-vs-eviction-walk` (bound 2): a receiver's `_setup_bootstrap_infos()` filling an
  uncached key of a second prefill (`OTHER_ADDR`, one entry of it already cached)
  against the heartbeat's eviction of the first prefill (`ADDR`, nothing of it cached),
  which walks the whole pool.
  The fill's `setdefault` must wait for the walk: an insertion during it raises
  RuntimeError in the heartbeat. The pool is `stale_bootstrap.SeenPool` (frontrun sees
  each step of the walk). The worker calls `_setup_bootstrap_infos()` alone (set up by
  a whole `init()` in the world whose entry is then dropped, as a pool eviction drops
  it): `init()`'s other calls only add shared accesses.

- `recompute-failure-vs-poll` (upstream 0.5.23, configuration `prefill_complete`): the
  receiver's `_lifecycle_lock` (a `nullcontext()` in the default configuration). A
  receiver whose transfer is under way; one thread: the prefill's Success lands
  (`update_status`), then the scheduler polls; the other: the prefill-recompute
  callback's failure (`_fail_prefill_recompute`: it gives up on a request that has not
  succeeded, aborting it and recording why). The two must agree: a poll that read
  Success is never followed by the request's failure (a failure record for a request the
  scheduler finished, which the room's next request would report). Without the lock in
  `poll`, the poll reads Success between the callback's check and its abort. The world is
  built from the variant's `CONFIGURATIONS["prefill_complete"]`; a variant without it (our
  forms, 0.5.19) cannot run it (`unknown`).

These are on request only (`ON_REQUEST`): `--explore --property ID` runs them, the
default run and a bare `--explore` do not (no verdict is expected of them; the
mutation stage compares a mutant's verdict with the unmutated tree's). They need
upstream's method names, which our forms share: fixed and hardened hold both; buggy, whose
fill writes the pool without the lock, is `bug` on `fill-vs-eviction-walk` and has no
`invalidate_cached_bootstrap_infos` (`unknown`). Measured on upstream 0.5.19 and 0.5.23:
both hold (all 2 interleavings; 17 at bound 2, under 3 s), and the remove-lock mutants of
`invalidate_cached_bootstrap_infos`, `_handle_node_failure` and the fill's `setdefault`
are `bug` after 2 to 3 interleavings. `recompute-failure-vs-poll` on 0.5.23: holds over all 2
interleavings (0.2 s); the remove-lock mutant of `poll` is `bug` after 4.
"""

from __future__ import annotations

from contextlib import nullcontext
from types import ModuleType

from reference.explore.property import Property, ThreadErrors
from reference.explore.stale_bootstrap import (
    ADDR,
    OTHER_ADDR,
    World,
    check_no_errors,
    heartbeat_evicts,
    other_prefill_world,
)
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

LESSON = "stale-bootstrap"
NEEDS = ("KVManager", "KVReceiver", "KVManager._handle_node_failure")


def _holder_invalidates(world: World) -> None:
    world.holders[0].invalidate_cached_bootstrap_infos()


def check_evicted(world: World) -> list[str]:
    """No thread raised, and nothing of the evicted prefill is cached at the end."""
    problems = check_no_errors(world)
    left = sorted(key for key in world.manager.connection_pool if key.startswith(ADDR))
    if left:
        problems.append(f"the evicted prefill's {', '.join(left)} stays cached")
    return problems


def fill_world(variant: ModuleType) -> World:
    """`other_prefill_world`'s pool, plus a receiver of `OTHER_ADDR` (dp 0) whose `init()`
    filled its key, the entry then dropped (as an eviction drops it): its
    `_setup_bootstrap_infos()` fills it again."""
    world = other_prefill_world(variant)
    before = set(world.manager.connection_pool)
    filler = world.receiver_class(world.manager, OTHER_ADDR, 1)
    filler.init(0)
    for key in set(world.manager.connection_pool) - before:
        world.manager.connection_pool.pop(key)
    getattr(filler, "_connection_pool_entries", {}).clear()
    world.filler = filler  # type: ignore[attr-defined]
    return world


def _fill_again(world: World) -> None:
    filler = world.filler  # type: ignore[attr-defined]
    # the upstream adapter binds upstream's route fetch to the manager's transport and clock
    with getattr(filler, "_bound", nullcontext)():
        filler._setup_bootstrap_infos()


# -- `recompute-failure-vs-poll` (0.5.23, configuration `prefill_complete`) -------------
ROOM = 4600
RECOMPUTE_NEEDS = ("KVManager", "KVReceiver", "KVManager._fail_prefill_recompute")


class RecomputeWorld(ThreadErrors):
    """A receiver under `prefill_complete` whose transfer is under way (Transferring), its
    poll results (`seen`), and the manager of the variant's configuration."""

    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        configured = getattr(variant, "CONFIGURATIONS", {}).get("prefill_complete")
        if configured is None:
            raise LookupError("the variant offers no configuration 'prefill_complete'")
        self.manager = configured.KVManager(MockNetwork())
        self.receiver = configured.KVReceiver(self.manager, ADDR, ROOM)
        for status in (KVPoll.WaitingForInput, KVPoll.Transferring):
            self.manager.update_status(ROOM, status)
        self.seen: list[KVPoll] = []


def _success_then_poll(world: RecomputeWorld) -> None:
    world.manager.update_status(ROOM, KVPoll.Success)  # the prefill's last answer lands
    world.seen.append(KVPoll(world.receiver.poll()))  # the scheduler's next poll


def _recompute_fails(world: RecomputeWorld) -> None:
    world.manager._fail_prefill_recompute(world.receiver, "the rebootstrap's /generate failed")


def check_poll_agrees(world: RecomputeWorld) -> list[str]:
    """No thread raised; a poll that read Success was not followed by the request's failure."""
    problems = [f"thread died: {error}" for error in world.errors]
    recorded = ROOM in world.manager.failure_records
    status = world.manager.request_status.get(ROOM)
    failed = recorded or (status is not None and KVPoll(int(status)) == KVPoll.Failed)
    if world.seen == [KVPoll.Success] and failed:
        shown = "absent" if status is None else KVPoll(int(status)).name
        recorded_text = "a failure recorded" if recorded else "no failure recorded"
        problems.append(
            f"the scheduler's poll read Success, then the recompute callback failed the request: "
            f"the room reads {shown}, {recorded_text}"
        )
    return problems


PROPERTIES = (
    Property(
        lesson=LESSON,
        id="invalidation-vs-eviction",
        claim="a holder's invalidation and the heartbeat's eviction of the same prefill raise nothing",
        needs=(*NEEDS, "KVReceiver.invalidate_cached_bootstrap_infos"),
        setup=lambda variant: World(variant, holders=1),
        workers=(("holder-invalidates", _holder_invalidates), ("heartbeat-evicts", heartbeat_evicts)),
        check=check_evicted,
        claimed=False,
    ),
    Property(
        lesson=LESSON,
        id="fill-vs-eviction-walk",
        claim="a fill of one prefill's key while the heartbeat walks the pool to evict another raises "
        "nothing",
        needs=(*NEEDS, "KVReceiver._setup_bootstrap_infos"),
        setup=fill_world,
        workers=(("fill", _fill_again), ("heartbeat-evicts", heartbeat_evicts)),
        check=check_no_errors,
        bound=2,
        claimed=False,
    ),
    Property(
        lesson=LESSON,
        id="recompute-failure-vs-poll",
        claim="the prefill-recompute callback's failure and the scheduler's poll agree: a poll that read "
        "Success is never followed by the request's failure",
        needs=RECOMPUTE_NEEDS,
        setup=RecomputeWorld,
        workers=(("success-then-poll", _success_then_poll), ("recompute-fails", _recompute_fails)),
        check=check_poll_agrees,
        claimed=False,
    ),
)
