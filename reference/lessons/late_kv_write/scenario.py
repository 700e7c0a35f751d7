"""Lesson `late-kv-write` (residual: open after all four fixes; found on the netns transport).

A prefill that is slow but not dead (paused, or cut off by a partition longer than the
waiting timeout) still holds request A's metadata: the decode pages A asked it to fill.
A fails on its waiting timeout, the scheduler clears it and frees its pages, and the
next request B gets those pages (an allocator hands out what was freed last). B is
served and succeeds with its own bytes. Then the prefill resumes and does A's transfer:
A's KV bytes land in B's pages, after B succeeded, and nothing on the decode notices (a
late status for a cleared room is dropped; the bytes are already written). On netns
(`--transport netns`: `reference/netns/runs.py --fault pause`, a real SIGSTOP past the
waiting timeout, then SIGCONT) the resumed prefill writes a failed, cleared room's pages:
`bug` when those pages had been freed for reuse, `ok` when the variant held them.

The scenario (mock transport, virtual clock): A's metadata to its two prefill ranks,
and the abort its timeout sends after it, are held 600 s (the prefill is paused: the
messages wait in its socket, in order); A fails on the 300 s waiting timeout and is
cleared; B_AFTER (60 s) later the scheduler takes pages for B,
skipping those the manager reports in doubt (`KVManager.pages_in_doubt()`, where a
variant has it); B succeeds; then the clock passes 600 s: the ranks do A's transfer (the mock's data plane
writes the decode's memory directly, as RDMA does), then read the abort, too late. `bug`
when B's pages no longer hold B's bytes afterwards; `ok` when they do and the pages
A's prefill wrote were out of use until its ranks answered.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from reference import wire
from reference.harness.checks import Check
from reference.harness.deep import exploration_checks
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.lessons.stale_bootstrap.world import (
    CONFIG,
    PAGES,
    PAGES_PER_REQUEST,
    TP_SIZE,
    World,
    open_world,
)
from reference.status import KVPoll

LATE = 2 * CONFIG.waiting_timeout  # seconds A's prefill messages are held: past the waiting timeout
# B arrives this long after A failed: past upstream's deferred decode KV release, which from
# sglang 0.5.21 holds a failed request's pages until every prefill rank acknowledges its
# abort, but 30 s at most (SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE_TIMEOUT), then
# frees them anyway. A prefill paused longer than that still writes them.
B_AFTER = 60.0


class Pages:
    """The scheduler's page allocator: freed pages are handed out first (last freed, first out)."""

    def __init__(self, count: int) -> None:
        self.free = list(range(count))

    def take(self, n: int, in_doubt: set[int]) -> list[int]:
        usable = [p for p in self.free if p not in in_doubt]
        taken = usable[:n]
        self.free = [p for p in self.free if p not in taken]
        return taken

    def give_back(self, pages: list[int]) -> None:
        self.free = list(pages) + self.free


def _in_doubt(world: World) -> set[int]:
    report = getattr(world.manager, "pages_in_doubt", None)  # a variant may know which pages are unsafe
    return set(report()) if report is not None else set()


def _request(world: World, room: int, pages: list[int]) -> Any:
    for region in range(world.memory.regions):
        world.memory.zero(region, pages)
    receiver = world.variant.KVReceiver(world.manager, world.addr, room)
    receiver.init(0)
    if receiver.poll() != KVPoll.Failed:
        receiver.send_metadata(pages)
    return receiver


def observe(variant: ModuleType, options: Options) -> Observation:
    if options.transport == "netns":  # the real fault: reference/netns/runs.py
        from reference.netns import runs

        return runs.observe("pause", variant)
    return _story(variant, options)


def _story(variant: ModuleType, options: Options, reused: bool = False) -> Observation:
    """The story; `reused`: room A's id was a request P's, which succeeded and is cleared late."""
    room_a, room_b = random.Random(options.seed).sample(range(1, 1 << 40), 2)
    timeline: list[Event] = []
    pages = Pages(PAGES)
    with open_world(variant, "mock", sockets=options.sockets) as world:
        world.start()
        previous = _succeeded(world, room_a, pages.take(PAGES_PER_REQUEST, set())) if reused else None
        if reused and previous is None:
            return Observation("unknown", "the check did not set up: P, the room id's first request, failed")
        # The prefill holds A's metadata (paused, or cut off) and, behind it on the same
        # connection, the abort A's timeout sends: both reach its ranks LATE seconds late.
        world.transport.delay(LATE, count=TP_SIZE, tag=wire.METADATA)
        world.transport.delay(LATE, count=TP_SIZE, tag=wire.ABORT)
        a_pages = pages.take(PAGES_PER_REQUEST, _in_doubt(world))
        a = _request(world, room_a, a_pages)
        a_status = world._wait(a)  # nothing comes back: the waiting timeout fails it
        a.clear()
        if previous is not None:  # P's clear comes late, after A's; its pages are freed before A's
            receiver, p_pages = previous
            receiver.clear()
            pages.give_back(p_pages)
        pages.give_back(a_pages)
        timeline.append(Event(world.clock.now(), f"A {KVPoll(a_status).name}, cleared", f"pages {a_pages}"))
        world.clock.advance(B_AFTER)  # the next request comes once any time-bound hold is over
        doubt = _in_doubt(world)
        b_pages = pages.take(PAGES_PER_REQUEST, doubt)
        b = _request(world, room_b, b_pages)
        b_status = world._wait(b)
        infos = list(b.bootstrap_infos or [])
        b_ok = b_status == KVPoll.Success and world._bytes_ok(room_b, infos, b_pages)
        timeline.append(Event(world.clock.now(), f"B {KVPoll(b_status).name}", f"pages {b_pages}"))
        world.clock.advance(LATE)
        world.pump()
        b_after = world._bytes_ok(room_b, infos, b_pages) if b_ok else False
        timeline.append(Event(world.clock.now(), "A's held messages arrive", f"B's bytes intact: {b_after}"))
        b.clear()
        details = {
            "a_pages": a_pages, "b_pages": b_pages, "a_final": KVPoll(a_status).name,
            "b_final": KVPoll(b_status).name, "b_bytes_ok_at_success": b_ok, "b_bytes_ok_after": b_after,
            "in_doubt_when_b_allocated": sorted(doubt), "in_doubt_at_end": sorted(_in_doubt(world)),
            "shared_pages": sorted(set(a_pages) & set(b_pages)), "held_seconds": LATE,
        }  # fmt: skip
    return _verdict(details, timeline)


def _succeeded(world: World, room: int, pages: list[int]) -> tuple[Any, list[int]] | None:
    """A request P on `room` that every rank answered (Success), not yet cleared; None if it failed."""
    receiver = _request(world, room, pages)
    return (receiver, pages) if world._wait(receiver) == KVPoll.Success else None


def reused_room(variant: ModuleType, options: Options) -> Observation:
    """The story with room A's id reused: request P had it first, succeeded (all its ranks
    answered), and its clear comes only after A's (the room-reuse lesson's late clear). A's
    pages must stay held until A's own ranks answer: answers P's ranks gave count for P, never
    for A, whatever a fix counts them by."""
    seen = _story(variant, options, reused=True)
    return Observation(seen.verdict, f"A's room id was P's (Success, cleared late): {seen.symptom}",
                       seen.timeline, seen.details)  # fmt: skip


def _verdict(d: dict[str, Any], timeline: list[Event]) -> Observation:
    if d["a_final"] != "Failed" or not d["b_bytes_ok_at_success"]:
        return Observation(
            "unknown", f"the scenario did not set up: A {d['a_final']}, B {d['b_final']}", timeline, d
        )
    if not d["b_bytes_ok_after"]:
        return Observation(
            "bug",
            f"request A failed on its waiting timeout and was cleared; B got A's pages {d['shared_pages']} "
            f"and succeeded; then A's prefill did the transfer it still held and overwrote B's KV "
            f"({d['held_seconds']:g} s late), after B's Success",
            timeline,
            d,
        )
    if d["in_doubt_at_end"]:
        return Observation(
            "bug", f"pages {d['in_doubt_at_end']} stayed in doubt after every rank answered", timeline, d
        )
    return Observation(
        "ok",
        f"A's pages {d['a_pages']} stayed out of use while its prefill still held its metadata; B got "
        f"{d['b_pages']} and kept its bytes when A's late transfer landed; A's pages were released "
        "once its ranks answered",
        timeline,
        d,
    )


GAP = 30.0  # seconds between the two ranks resuming


def ranks_resume_apart(variant: ModuleType, options: Options) -> Observation:
    """The story's ranks resuming apart: rank 1's held messages arrive GAP seconds after rank
    0's, and request C takes pages between the two. In the story both resume together, so a
    hold let go at the first late answer, not the last, passes it. A held page must stay out
    of use until every rank that held A's metadata answered: any correct hold has that,
    whatever it counts (answers, ranks, an end-of-transfer marker)."""
    room_a, room_c = random.Random(options.seed).sample(range(1, 1 << 40), 2)
    pages = Pages(PAGES)
    with open_world(variant, "mock", sockets=options.sockets) as world:
        world.start()
        for tag in (wire.METADATA, wire.ABORT):  # rank 0's messages, then rank 1's, in send order
            world.transport.delay(LATE, count=1, tag=tag)
            world.transport.delay(LATE + GAP, count=1, tag=tag)
        a_pages = pages.take(PAGES_PER_REQUEST, _in_doubt(world))
        sent = world.clock.now()
        a = _request(world, room_a, a_pages)
        if world._wait(a) != KVPoll.Failed:
            return Observation(
                "unknown", "the scenario did not set up: A did not fail on its waiting timeout"
            )
        a.clear()
        pages.give_back(a_pages)
        world.clock.advance(sent + LATE + GAP / 2 - world.clock.now())  # rank 0 resumed and answered
        world.pump()
        c_pages = pages.take(PAGES_PER_REQUEST, _in_doubt(world))
        c = _request(world, room_c, c_pages)
        infos = list(c.bootstrap_infos or [])
        if world._wait(c) != KVPoll.Success or not world._bytes_ok(room_c, infos, c_pages):
            return Observation("unknown", "the scenario did not set up: C did not succeed")
        world.clock.advance(sent + LATE + GAP - world.clock.now())  # rank 1 resumes: A's transfer lands
        world.pump()
        intact = world._bytes_ok(room_c, infos, c_pages)
        c.clear()
    shared = sorted(set(a_pages) & set(c_pages))
    if not intact:
        return Observation(
            "bug",
            f"A's rank 0 answered late, and A's pages {shared} went to request C while rank 1 still "
            f"held A's metadata; rank 1 resumed {GAP:g} s later and overwrote C's KV after C's Success",
        )
    return Observation(
        "ok",
        f"after rank 0's late answer A's pages stayed out of use (C got {c_pages}); "
        f"rank 1's transfer {GAP:g} s later left C's KV intact",
    )


LESSON = Lesson(
    id="late-kv-write",
    title="A failed request's late KV transfer overwrites the pages of the next request",
    upstream="residual after every fix (found on netns: pause, partition, one-way partition)",
    needs=("KVManager", "KVReceiver", "KVManager.try_ensure_parallel_info", "KVManager.listen"),
    body=observe,
    checks=(
        Check(
            id="ranks-resume-apart",
            claim="a failed request's pages stay out of use until every rank that held its metadata answered",
            source="HARDEN(late-kv-write), residual after every fix: pages are held while a prefill "
            "may still write them",
            body=ranks_resume_apart,
        ),
        Check(
            id="reused-room-counts-own-answers",
            claim="a failed request on a reused room id holds its pages until its own ranks answered, "
            "whatever the room's previous request was told",
            source="HARDEN(late-kv-write): statuses are counted per open request (a reopened room "
            "starts at none), and a request ends holding its pages for the answers still due",
            body=reused_room,
        ),
        *exploration_checks("late-kv-write"),
    ),
    transports=("mock", "netns"),
)
