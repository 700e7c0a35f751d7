"""Checks: which cache keys an invalidation reaches, and what the next request does.

That every key a failing receiver used goes (context parallelism 2) and that the request
after an invalidation fetches `/route` again are the simulation's `failed-entry-invalidated`
(`reference/sim/invariants.py`), over generated CP layouts and restarts: they were checks
here, and the simulation and `recovery-one-failure-per-key` catch every wrong fix and mutant
they caught.

- a request that succeeds leaves its entries cached (the cache still saves every fetch);
- keys of another prefill stay (two prefills, one restarts);
- recovery: with several receivers in flight over two prefills with two keys each, a
  restart costs at most one failed request per cache key, then every request succeeds.
"""

from __future__ import annotations

from types import ModuleType

from reference.harness.options import Options
from reference.harness.result import Observation
from reference.lessons.stale_bootstrap.check_world import CheckWorld, check_world, show
from reference.lessons.stale_bootstrap.checks_triggers import judged
from reference.status import KVPoll


def _fail_on_dead_ports(world: CheckWorld, prefill: int = 0) -> tuple[int, KVPoll]:
    """Warm the cache, restart the prefill, let one request meet the dead ports (it fails,
    or a variant recovers by itself). Returns the rank fetches so far and how it ended."""
    world.request(prefill)
    world.prefills[prefill].restart()
    fetched = world.net.rank_routes
    return fetched, world.request(prefill).status


@judged
def other_prefill_survives(variant: ModuleType, options: Options) -> Observation:
    with check_world(variant, "upstream", prefills=2, cp=2) as world:
        world.request(1)
        kept = world.ports(1)
        if not kept:
            return Observation("unknown", "a successful request to prefill 1 left nothing cached")
        _fail_on_dead_ports(world, 0)
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
    if first.status != KVPoll.Success:
        return Observation("unknown", f"the first request ended {first.status.name}: {first.reason}")
    if second.fetches or second.status != KVPoll.Success or after != cached or len(cached) < 2:
        return Observation(
            "bug",
            f"after a successful request {len(cached)} of 2 keys stayed cached ({show(cached)}); the next "
            f"request fetched /route {second.fetches} times and ended {second.status.name}",
        )
    return Observation("ok", "both keys stayed cached after a success; the next request fetched nothing")


ROUNDS_BEFORE, ROUNDS_AFTER = 2, 4


@judged
def recovery_one_failure_per_key(variant: ModuleType, options: Options) -> Observation:
    """Each round opens one receiver per prefill (both in flight), then both send and end."""
    with check_world(variant, options.sockets, prefills=2, cp=2) as world:
        for _ in range(ROUNDS_BEFORE):
            _round(world)
        keys = len(world.ports(0))
        for prefill in world.prefills:
            prefill.restart()
        after = [_round(world) for _ in range(ROUNDS_AFTER)]
    problems = []
    for index in (0, 1):
        statuses = [round_[index] for round_ in after]
        failed = statuses.count(KVPoll.Failed)
        first_ok = statuses.index(KVPoll.Success) if KVPoll.Success in statuses else len(statuses)
        names = ", ".join(s.name for s in statuses)
        if failed > keys or KVPoll.Failed in statuses[first_ok:] or first_ok == len(statuses):
            problems.append(f"prefill {index}: {names}")
    if problems:
        return Observation(
            "bug",
            f"after both prefills restarted, at most {keys} failed requests per prefill ({keys} keys), "
            f"then only successes, expected; got {'; '.join(problems)}",
        )
    return Observation("ok", f"after the restarts: {[[s.name for s in r] for r in after]}")


def _round(world: CheckWorld) -> list[KVPoll]:
    receivers = [world.open(prefill) for prefill in range(len(world.prefills))]
    for receiver in receivers:
        world.send(receiver)
    ended = [world.settle(receiver) for receiver in receivers]
    for receiver in receivers:
        receiver.clear()
    return ended
