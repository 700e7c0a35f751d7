"""Explorations for lesson `late-kv-write` (residual of every fix): the held pages' table.

A request that ends with ranks still holding its metadata has its pages held
(`hold_pages(room, pages, due)`); each late status of that cleared room counts one
answer down (`accepts_transfer_status`, the decode inbox's question) and the last one
releases them; the scheduler asks `pages_in_doubt()` before it hands pages out, which
also lets go of holds whose answers are the variant's `HOLD_FOR` overdue. Those three
run on different threads (the status thread, the scheduler) and share one table, so
each is a check-then-act or an iteration that another thread's write can break. The
lesson's story calls them one at a time; these run them on real threads, no hooks.

- `late-answers-release-held`: a room held with two answers due; two ranks' late
  statuses arrive on two threads. Whatever the interleaving: no exception, and once
  both answered no page is in doubt (a lost count-down keeps them held until the
  bound; a `del` of an entry the other thread deleted raises).
- `hold-during-allocation`: two rooms held, a third whose hold expired; a request ends
  and holds its pages while the scheduler asks for the pages in doubt. No exception
  (a store into the table while another thread iterates it raises `RuntimeError`),
  the scheduler's answer names every page held throughout and no expired one, and
  the new request's pages are in doubt at the end.

- `late-answer-vs-reopen`: a cleared room held with one answer due; its rank's late
  status arrives while the scheduler reopens the room id for a new request that sends its
  metadata (`update_status(room, Bootstrapping)`, then `expect_transfer(room)`). Whatever
  the interleaving: no exception, and the answer is counted somewhere: it releases the old
  hold, or it is accepted as the new request's (a status that reads the room's acceptance
  before the held-pages check, and the reopen lands between, does neither: the rank's
  pages stay held to the bound, and the new request never hears it).

The world's table is a `SeenTable` (below): a dict whose iteration the explorer can see.
Both need the held-pages table (`hold_pages`, `pages_in_doubt`, `expect_transfer`): a
fix that keeps late writes out another way has nothing here to explore (`unknown`, the
lesson's story still judges it), and buggy and fixed, which have none, are not judged
(`hardened_only`).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.explore.property import Property, ThreadErrors
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ROOM, OLD, OLDER, EXPIRED, NEW = 3, 4, 5, 6, 7
PAGES = {ROOM: [10, 11, 12], OLD: [20, 21], OLDER: [30], EXPIRED: [40, 41], NEW: [50, 51]}


def _manager(variant: ModuleType) -> Any:
    manager = variant.KVManager(MockNetwork(), ManagerConfig(), VirtualClock())
    if isinstance(getattr(manager, "held_pages", None), dict):  # empty, before any request
        manager.held_pages = SeenTable(manager.held_pages)
    return manager


def hold_bound(manager: Any) -> float | None:
    """The `HOLD_FOR` the variant's manager declares (its class or a base's module), if any."""
    for cls in type(manager).__mro__:
        bound = getattr(sys.modules.get(cls.__module__), "HOLD_FOR", None)
        if isinstance(bound, int | float):
            return float(bound)
    return None


class SeenTable(dict):
    """The held-pages table with its views iterated in Python, each step a read of the table.

    frontrun records no access for the steps of a C dict-view iterator, so DPOR would never
    put another thread's store between two of them (the store then raises RuntimeError in
    the iteration). Here each step reads `self[key]`, which the explorer sees; what a step
    yields, and what a store during the iteration does, are a dict's.
    """

    def values(self) -> Any:
        return (self[key] for key in dict.__iter__(self))

    def items(self) -> Any:
        return ((key, self[key]) for key in dict.__iter__(self))


def _end_with_answers_due(manager: Any, room: int, due: int) -> None:
    """A request that sent its metadata and was cleared with `due` ranks' answers outstanding."""
    manager.update_status(room, KVPoll.Bootstrapping)
    manager.expect_transfer(room)
    manager.hold_pages(room, PAGES[room], due)
    manager.clear(room)


class AnswersWorld(ThreadErrors):
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.manager = _manager(variant)
        _end_with_answers_due(self.manager, ROOM, 2)


def late_answer(world: AnswersWorld) -> None:
    world.manager.accepts_transfer_status(ROOM)


def check_answers(world: AnswersWorld) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    left = world.manager.pages_in_doubt()
    if left:
        problems.append(f"both ranks answered, yet pages {sorted(left)} are still in doubt")
    return problems


class ReopenWorld(ThreadErrors):
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.manager = _manager(variant)
        _end_with_answers_due(self.manager, ROOM, 1)
        self.accepted: bool | None = None  # what the late status was told


def late_answer_told(world: ReopenWorld) -> None:
    world.accepted = bool(world.manager.accepts_transfer_status(ROOM))


def room_reopened(world: ReopenWorld) -> None:
    """A new request on the room id: opened, then its metadata sent (answers now count)."""
    world.manager.update_status(ROOM, KVPoll.Bootstrapping)
    world.manager.expect_transfer(ROOM)


def check_reopen(world: ReopenWorld) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    held = set(PAGES[ROOM]) & world.manager.pages_in_doubt()
    if world.accepted is False and held:
        problems.append(
            f"the late answer was counted nowhere: refused for the reopened room {ROOM}, yet its old "
            f"request's pages {sorted(held)} are still held for it"
        )
    return problems


class AllocationWorld(ThreadErrors):
    def __init__(self, variant: ModuleType) -> None:
        super().__init__()
        self.manager = _manager(variant)
        self.bound = hold_bound(self.manager)
        self.seen: set[int] | None = None
        self.manager.update_status(NEW, KVPoll.Bootstrapping)
        if self.bound is not None:  # a hold whose answers are overdue by the variant's own bound
            _end_with_answers_due(self.manager, EXPIRED, 1)
            self.manager.clock.advance(self.bound)
        for room in (OLD, OLDER):
            _end_with_answers_due(self.manager, room, 1)
        self.manager.expect_transfer(NEW)


def new_request_ends(world: AllocationWorld) -> None:
    world.manager.hold_pages(NEW, PAGES[NEW], 1)


def scheduler_allocates(world: AllocationWorld) -> None:
    world.seen = set(world.manager.pages_in_doubt())


def check_allocation(world: AllocationWorld) -> list[str]:
    problems = [f"thread died: {error}" for error in world.errors]
    held = set(PAGES[OLD] + PAGES[OLDER])
    if world.seen is not None:
        if not held <= world.seen:
            problems.append(
                f"the scheduler was told {sorted(world.seen)}: held pages {sorted(held - world.seen)} missing"
            )
        if world.bound is not None and world.seen & set(PAGES[EXPIRED]):
            problems.append(f"pages {PAGES[EXPIRED]} named in doubt although their hold passed HOLD_FOR")
    final = world.manager.pages_in_doubt()
    if not set(PAGES[NEW]) <= final:
        problems.append(
            f"the ended request's pages {PAGES[NEW]} are not in doubt at the end ({sorted(final)})"
        )
    return problems


NEEDS = (
    "KVManager",
    "KVManager.accepts_transfer_status",
    "KVManager.hold_pages",
    "KVManager.pages_in_doubt",
    "KVManager.expect_transfer",
)

PROPERTIES = (
    Property(
        lesson="late-kv-write",
        id="late-answers-release-held",
        claim="two ranks' late answers on two threads release a held room's pages, raising nothing",
        needs=NEEDS,
        hardened_only=True,  # buggy and fixed hold no pages at all
        setup=AnswersWorld,
        workers=(("rank-0-status", late_answer), ("rank-1-status", late_answer)),
        check=check_answers,
    ),
    Property(
        lesson="late-kv-write",
        id="late-answer-vs-reopen",
        claim="a held room's late answer racing the room's reopening is counted: it releases the hold or is "
        "accepted",
        needs=NEEDS,
        hardened_only=True,
        setup=ReopenWorld,
        workers=(("rank-status", late_answer_told), ("scheduler-reopens", room_reopened)),
        check=check_reopen,
    ),
    Property(
        lesson="late-kv-write",
        id="hold-during-allocation",
        claim="a hold stored while the scheduler asks for the pages in doubt raises nothing, loses no page",
        needs=NEEDS,
        hardened_only=True,
        setup=AllocationWorld,
        workers=(("scheduler-allocates", scheduler_allocates), ("request-ends", new_request_ends)),
        check=check_allocation,
    ),
)
