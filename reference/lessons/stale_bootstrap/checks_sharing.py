"""Checks: receivers sharing `connection_pool`, interleaved around a prefill restart.

The interleavings are scripted at the receivers' own transport calls
(`ScriptedNetwork.at`, run through `CheckWorld.beside`), so they are the same on any
variant and need no hook inside the receiver:

- identity safety: a receiver still holding the pre-restart entry fails *after*
  another one installed the new generation; the new one must stay;
- a concurrent fill: while one receiver fetches `/route` for a key, another fills the
  same key; then the prefill restarts and one of the two fails on the entry: whichever
  it is, no stale entry may stay (one of them kept its own copy instead of adopting);
- registered before cached: a receiver that finds an entry can use it, because the
  filler registered with those ranks before it cached them;
- keys of another prefill stay (two prefills, CP 2, one restarts), and a request that
  succeeds leaves its entries cached (the cache still saves every fetch).

That every key a failing receiver used goes, that the next request fetches `/route`
again and that a restart costs at most one failure per key are the simulation's
`failed-entry-invalidated` (`reference/sim/invariants.py`) and the story's.
"""

from __future__ import annotations

from types import ModuleType

from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import CheckWorld, Done, check_world, show
from reference.lessons.stale_bootstrap.checks_triggers import judged
from reference.status import KVPoll


@judged
def replacement_survives(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream") as world:
        world.request()
        old = world.open()  # r1 and r2 hold the pre-restart entry, in flight
        held = world.open()
        world.prefills[0].restart()
        world.send(old)
        world.send(held)
        world.settle(old)  # fails (or a variant recovers by itself)
        old.clear()
        fresh = world.request()  # r3 fetches the new ports and caches them
        installed = world.ports()
        if fresh.status != KVPoll.Success or not installed:
            return Observation(
                "bug",
                f"no new generation was ever installed: after a failure on the pre-restart entry the next "
                f"request ended {fresh.status.name} on ports {list(fresh.ports)} after {fresh.fetches} "
                "fetches",
            )
        late = world.settle(held)  # r2's end comes last: it must not drop r3's entry
        held.clear()
        after = world.ports()
        nxt = world.request()
    if after != installed or nxt.fetches:
        return Observation(
            "bug",
            f"a receiver that ended {late.name} on the pre-restart entry dropped the new one another "
            f"receiver installed ({show(installed)}; left: {show(after)}): the next request fetched /route "
            f"{nxt.fetches} more times",
        )
    return Observation(
        "ok", f"the late failure left the new entry ({show(installed)}); next request: 0 fetches"
    )


def _fill_concurrently(world: CheckWorld) -> tuple[object, object]:
    """r1 fills the key; while it fetches the route, r2 fills the same key (beside it)."""
    opened: list[object] = []
    world.net.at("route", world.beside(lambda: opened.append(world.open())))
    first = world.open()
    if not opened:
        raise RuntimeError("the first receiver never fetched a route")
    return first, opened[0]


@judged
def concurrent_fill_adopts(variant: ModuleType, options: Options) -> Observation:
    findings = []
    for failing in (0, 1):  # which of the two fillers later fails on the entry
        with check_world(variant, "upstream") as world:
            fillers = _fill_concurrently(world)
            winner_entry = world.ports()
            survivor, loser = fillers[1 - failing], fillers[failing]
            world.send(survivor)
            if world.settle(survivor) != KVPoll.Success:
                return Observation("unknown", "a concurrent filler failed before the restart")
            dead = world.prefills[0].rank_ports
            world.prefills[0].restart()
            world.send(loser)
            status = world.settle(loser)
            stale = world.stale(dead)
            names = ("the receiver that fetched first", "the receiver that filled beside it")
            if stale:
                findings.append(
                    f"{names[failing]} ended {status.name} on the entry and left {show(stale)} cached"
                )
    if findings:
        return Observation(
            "bug",
            f"two receivers filled one key concurrently (cached: {show(winner_entry)}) but did not end on "
            f"one generation: after a restart, {'; '.join(findings)}",
        )
    return Observation("ok", "whichever concurrent filler failed after the restart, no stale entry stayed")


@judged
def registered_before_cached(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", tp=2) as world:
        beside: list[Done] = []
        endpoint = world.prefills[0].endpoints[0]
        world.net.at("connect", world.beside(lambda: beside.append(world.request())), endpoint=endpoint)
        first = world.open()
        world.send(first)
        status = world.settle(first)
    if not beside:
        return Observation("unknown", "the filling receiver never connected to a prefill rank")
    other = beside[0]
    if other.status != KVPoll.Success or status != KVPoll.Success:
        return Observation(
            "bug",
            f"a request that ran while another receiver was registering with a fresh entry ended "
            f"{other.status.name} ({other.reason}); the filler ended {status.name}: the entry was "
            f"usable from the cache before its ranks had this decode's registration",
        )
    return Observation(
        "ok", f"a request beside the filler's registration fetched {other.fetches} routes and succeeded"
    )


@judged
def other_prefill_survives(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", prefills=2, cp=2) as world:
        world.request(1)
        kept = world.ports(1)
        if not kept:
            return Observation("unknown", "a successful request to prefill 1 left nothing cached")
        world.request(0)  # warm prefill 0's entries, restart it, fail one request on its dead ports
        world.prefills[0].restart()
        world.request(0)
        lost = {k: v for k, v in kept.items() if world.ports(1).get(k) != v}
        done = world.request(1)
        if lost or done.fetches:
            return Observation(
                "bug",
                f"a failure on prefill 0 ({world.addr(0)}) dropped prefill 1's live entries {show(lost)}: "
                f"its next request fetched /route {done.fetches} times ({done.status.name})",
            )
        return Observation(
            "ok", f"prefill 1's keys ({', '.join(kept)}) stayed; its next request fetched nothing"
        )


@judged
def success_keeps_cache(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, options.sockets, tp=2, cp=2) as world:
        first = world.request()
        cached = world.ports()
        second = world.request()
        after = world.ports()
    if first.status != KVPoll.Success:  # a healthy prefill, TP 2 and CP 2: nothing may fail
        return Observation("bug", f"a request to a healthy prefill ended {first.status.name}: {first.reason}")
    if second.fetches or second.status != KVPoll.Success or after != cached or len(cached) < 2:
        return Observation(
            "bug",
            f"after a successful request {len(cached)} of 2 keys stayed cached ({show(cached)}); the next "
            f"request fetched /route {second.fetches} times and ended {second.status.name}",
        )
    return Observation("ok", "both keys stayed cached after a success; the next request fetched nothing")
