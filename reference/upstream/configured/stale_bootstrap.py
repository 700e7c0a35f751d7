"""Checks in a named configuration of upstream's decode (`reference/upstream/configs.py`).

Two paths of the receiver methods PR #36029 changed run only outside upstream's
defaults, in settings upstream's own server runs: an MLA model (`is_mla_backend`) and
the decode's staging ring (`SGLANG_DISAGG_STAGING_BUFFER=1`). Our forms model neither,
so these checks run only on a variant that offers the configuration (`Check.configuration`:
the upstream adapter), on that configuration's module; each symptom names it.

`mla-one-rank-asked`: an MLA decode fed by four prefill TP ranks asks exactly one of
them for its pages (every rank holds the same compressed KV); the three others get a
metadata frame with no pages (a dummy rank still answers, or the request's status would
never settle), and the request succeeds.

`staging-released`: on a decode whose prefill has another TP size (two ranks, decode
TP 1: the KV is staged), each rank's register frame names the decode's staging ring
(base and size: where the rank writes), a prefill rank's `STAGING_REQ` for a request in flight is
answered with a `STAGING_RSP` (an allocation in the decode's ring) to the room's ranks;
once the request ended and was cleared, the decode keeps no more than before it (the
whole-state measure of the simulation, `sim/heap.py`, on every container reachable from
its staging state, a warm-up request first): the ring's allocation and the room's
staging records are released.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from reference import wire
from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import PAGES, CheckWorld, check_world
from reference.lessons.stale_bootstrap.checks_triggers import judged
from reference.sim.heap import container_sizes, grown
from reference.status import KVPoll

MLA_TP = 4  # prefill TP ranks per decode rank: one real, three dummies
STAGING_TP = 2  # prefill TP 2, decode TP 1: upstream stages (require_staging)
STAGING_RSP = b"STAGING_RSP"
# Attributes of the staging state that lead out of it (the manager, the scheduler).
BEYOND = ("kv_manager", "kv_mgr", "scheduler")


def _named(variant: ModuleType) -> str:
    configuration = getattr(variant, "CONFIGURATION", None)
    return f"configuration {getattr(configuration, 'name', '?')}"


def _recording(world: CheckWorld) -> list[tuple[str, list[bytes]]]:
    """Every message the network delivers from now on, (endpoint, frames), in order."""
    delivered: list[tuple[str, list[bytes]]] = []
    deliver = world.net.deliver

    def record(endpoint: str, frames: list[bytes]) -> None:
        delivered.append((endpoint, list(frames)))
        deliver(endpoint, frames)

    world.net.deliver = record  # type: ignore[method-assign]
    return delivered


@judged
def mla_one_rank_asked(variant: ModuleType, options: Options) -> Observation:
    named = _named(variant)
    with check_world(variant, "upstream", tp=MLA_TP) as world:
        delivered = _recording(world)
        done = world.request()
        ranks = set(world.prefills[0].endpoints)
    pages: dict[str, int] = {}
    for endpoint, frames in delivered:
        if endpoint in ranks and frames and frames[0] == wire.METADATA:
            message = wire.decode(frames)
            assert isinstance(message, wire.Metadata)
            pages[endpoint] = len(message.kv_indices)
    asked = sorted(e.removeprefix("tcp://") for e, n in pages.items() if n)
    silent = sorted(e.removeprefix("tcp://") for e in ranks if e not in pages)
    if len(asked) != 1 or silent or done.status != KVPoll.Success:
        return Observation(
            "bug",
            f"{named}: of {MLA_TP} prefill ranks, asked for pages: {', '.join(asked) or 'none'}; sent no "
            f"metadata: {', '.join(silent) or 'none'}; request {done.status.name}",
        )
    return Observation(
        "ok",
        f"{named}: one of {MLA_TP} prefill ranks ({asked[0]}) asked for the pages, {MLA_TP - 1} sent a dummy "
        f"metadata frame; request Success",
    )


class HandlerRaised(Exception):
    """The decode's handling of a prefill rank's STAGING_REQ raised (its decode thread)."""


def _staging_request(world: CheckWorld, delivered: list[tuple[str, list[bytes]]]) -> tuple[KVPoll, int, int]:
    """One staged request: open, send, a prefill rank's STAGING_REQ for it, settle, clear.
    (its end, STAGING_RSPs to its ranks, ring allocations while it was in flight)."""
    receiver = world.open()
    world.send(receiver)
    room, start = receiver.bootstrap_room, len(delivered)
    session = world.manager.inbox.session
    request = [b"STAGING_REQ", b"%d" % room, b"0", b"%d" % len(PAGES), session.encode()]
    try:
        world.net.connect(f"tcp://{world.manager.inbox.endpoint}").send(request)
    except Exception as exc:
        raise HandlerRaised(f"{type(exc).__name__}: {exc}") from None
    ring = world.manager._staging_ctx.allocator
    held = len(ring.allocations)
    answers = sum(1 for _, frames in delivered[start:] if frames[:2] == [STAGING_RSP, b"%d" % room])
    status = world.settle(receiver)
    world.manager._staging_adapter.request_ended(room)  # the scheduler's teardown: unregister, then clear
    done = world.finish(receiver, status, 0)
    return done.status, answers, held


def _staging_state(manager: Any) -> dict[str, Any]:
    """The decode's staging state: its staging context (the ring and the rooms it knows)
    and the scheduler's staging handler (upstream's `_staging_ctx`, `_staging_handler`)."""
    return {"staging_ctx": manager._staging_ctx, "staging_handler": manager._staging_handler}


@judged
def staging_released(variant: ModuleType, options: Options) -> Observation:
    named = _named(variant)
    with check_world(variant, "upstream", tp=STAGING_TP) as world:
        delivered = _recording(world)
        try:
            _staging_request(world, delivered)  # warm-up: the cache, the watermark subscriber
            roots = _staging_state(world.manager)
            opaque = frozenset((*getattr(variant, "SIM_OPAQUE", ()), *BEYOND))
            before = container_sizes(roots, opaque)
            status, answers, held = _staging_request(world, delivered)
        except HandlerRaised as exc:
            return Observation(
                "bug", f"{named}: a prefill rank's STAGING_REQ for a request in flight raised {exc}"
            )
        kept = grown(before, container_sizes(roots, opaque))
        ring = world.manager._staging_ctx.allocator
        told = dict(world.manager._staging_adapter.rings)
        ranks = world.prefills[0].endpoints
    wrong = [
        e.removeprefix("tcp://") for e in ranks if told.get(e) != (ring.get_base_ptr(), ring.get_total_size())
    ]
    if wrong:
        return Observation(
            "bug",
            f"{named}: the register frame to {', '.join(wrong)} did not name the decode's staging ring "
            f"(told {', '.join(str(told.get(e)) for e in ranks)}; the ring is "
            f"{(ring.get_base_ptr(), ring.get_total_size())})",
        )
    if answers == 0 or held == 0 or status != KVPoll.Success:
        return Observation(
            "bug",
            f"{named}: a prefill rank's STAGING_REQ for a request in flight: {answers} STAGING_RSP to its "
            f"{STAGING_TP} ranks, {held} ring allocations; request {status.name}",
        )
    if kept:
        shown = ", ".join(f"{path} {was} -> {now}" for path, (was, now) in list(kept.items())[:4])
        return Observation(
            "bug", f"{named}: after a staged request ended and was cleared, the decode keeps {shown}"
        )
    return Observation(
        "ok",
        f"{named}: each of the {STAGING_TP} ranks' register frames named the staging ring; a STAGING_REQ "
        f"for a request in flight got {answers} STAGING_RSP ({held} ring allocation); after the request "
        f"ended and was cleared the decode keeps nothing more than before it",
    )
