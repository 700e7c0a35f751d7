"""Lesson `bootstrap-partition` (residual: open after all four fixes; found on the netns transport).

The heartbeat's only evidence of a prefill is `GET /health` on its bootstrap server. When
the bootstrap server alone is cut off (a partition of its port, a Kubernetes Service
whose endpoint for the HTTP port is gone, the HTTP thread wedged) while the prefill's
ranks go on transferring, two missed probes declare the whole prefill dead: every room
it serves is failed ("Lost connection with prefill instance") and its sockets closed,
although its ranks are answering other requests all the while.

On netns (`--transport netns`: `reference/netns/runs.py --fault bootstrap`, nft drops
the decode's packets to the bootstrap port only) a request issued after the heartbeat's
two misses, through the cached route to reachable ranks: `bug` when it failed.

The scenario (mock transport, virtual clock, upstream's 5 s x 2): request A (a long
prefill) sends its metadata; its ranks' statuses take 12 s. The bootstrap server becomes
unreachable at once (its ranks stay up). Short requests go on through the cached route,
one before each heartbeat probe, and succeed. The heartbeat misses twice (t = 5, 10 s);
at 12 s A's statuses arrive. `bug` when A or a short request failed, or A's failure came
from the heartbeat; `ok` when A succeeded with its own bytes and no short request failed.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from reference import wire
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.lessons.stale_bootstrap.world import CONFIG, TP_SIZE, World, open_world
from reference.status import KVPoll

SLOW = 12.0  # seconds A's transfer takes: longer than interval x misses (10 s)


def _short(world: World, room: int) -> str:
    return KVPoll(world.request(room).status).name


def observe(variant: ModuleType, options: Options) -> Observation:
    if options.transport == "netns":  # the real fault: reference/netns/runs.py
        from reference.netns import runs

        return runs.observe("bootstrap", variant)
    rooms = random.Random(options.seed).sample(range(1, 1 << 40), 8)
    timeline: list[Event] = []
    with open_world(variant, "mock", sockets=options.sockets) as world:
        world.start()
        world.transport.delay(SLOW, count=TP_SIZE, tag=wire.STATUS)  # A's two statuses
        pages = world._pages()
        for region in range(world.memory.regions):
            world.memory.zero(region, pages)
        a = variant.KVReceiver(world.manager, world.addr, rooms[0])
        a.init(0)
        a.send_metadata(pages)
        world.transport.kill(world.addr)  # the bootstrap server alone: /health and /route fail
        timeline.append(Event(0.0, "bootstrap server unreachable", "its ranks stay up"))
        shorts = []
        for tick in range(CONFIG.heartbeat_max_failures):
            shorts.append(_short(world, rooms[1 + tick]))
            world.tick()
            timeline.append(
                Event(world.clock.now(), f"heartbeat probe {tick + 1}", f"short request {shorts[-1]}")
            )
        a_mid = KVPoll(a.poll()).name
        world.clock.advance(SLOW - world.clock.now())
        world.pump()
        a_final = KVPoll(a.poll()).name
        infos = list(a.bootstrap_infos or [])
        a_bytes = a_final == "Success" and world._bytes_ok(rooms[0], infos, pages)
        reason = world.manager.failure_records.get(rooms[0])
        timeline.append(Event(world.clock.now(), "A's statuses arrive", f"A {a_final}"))
        a.clear()
        details = {
            "short_requests": shorts, "a_after_misses": a_mid, "a_final": a_final, "a_bytes_ok": a_bytes,
            "a_failure": reason, "probes_while_unreachable": CONFIG.heartbeat_max_failures,
            "heartbeat_misses": world.manager.heartbeat_failures.get(world.addr, 0),  # after the probes
        }  # fmt: skip
    return _verdict(details, timeline)


def _verdict(d: dict[str, Any], timeline: list[Event]) -> Observation:
    failed_short = [s for s in d["short_requests"] if s != "Success"]
    if d["a_final"] == "Success" and d["a_bytes_ok"] and not failed_short:
        return Observation(
            "ok",
            f"the bootstrap server missed {d['probes_while_unreachable']} probes while its ranks answered "
            f"{len(d['short_requests'])} short requests: the prefill was not declared dead; the slow "
            "request A succeeded with its own bytes",
            timeline,
            d,
        )
    served, asked = len(d["short_requests"]) - len(failed_short), len(d["short_requests"])
    probes = d["probes_while_unreachable"]
    return Observation(
        "bug",
        f"only the bootstrap server was unreachable, its ranks answering ({served} of {asked} short "
        f"requests succeeded), yet after {probes} missed probes the slow request A read "
        f"{d['a_after_misses']} and ended {d['a_final']} ({d['a_failure']!r})",
        timeline,
        d,
    )


LESSON = Lesson(
    id="bootstrap-partition",
    title="A prefill whose bootstrap server alone is cut off is declared dead",
    upstream="residual after every fix (found on netns: a partition of the bootstrap port)",
    needs=("KVManager", "KVReceiver", "KVManager.try_ensure_parallel_info", "KVManager.listen"),
    body=observe,
    transports=("mock", "netns"),
)
