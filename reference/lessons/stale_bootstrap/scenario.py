"""Lesson `stale-bootstrap` (PR #36029; sglang 0.5.19).

A decode receiver caches each prefill rank's PULL address in `connection_pool` under
`"{addr}_{dp}_{cp}_{tp}"`. When the prefill restarts behind the same bootstrap address
(a quick restart, a Kubernetes Service), its ranks bind new ephemeral ports, but the
key does not change, `/health` keeps answering, so the heartbeat never evicts the
entry: the buggy receiver keeps sending to the dead ports (and never re-registers its
KV memory with the new process) until the decode restarts. The fixed receiver drops
the generation it used when a send fails (or a fetch, a registration, or the waiting
timeout), so the next request fetches `/route` again and re-registers.

The scenario is a steady stream of requests, one at a time, to a prefill with two TP
ranks; the prefill restarts after `BEFORE` requests and the stream goes on for `AFTER`.
The heartbeat runs on the virtual clock, one interval per request, and sees every
probe answered. Verdict from what the requests did: `bug` when no request succeeds
after the restart (naming the stale ports), when more than one request per cache key
fails, or when KV bytes differ from what the prefill sent; `ok` when, after at most
one failure per key, every request succeeds on the new ports with verified bytes.
With upstream's socket options (the default) a send to a stale port is queued silently
and the request fails on its waiting timeout (on loopback shortened to a few real
seconds, reported in the details); with `--sockets fail-fast` the send fails at once.
On `--transport loopback` the prefill is a real OS process killed and started again;
with `--backend NAME` its ranks write the KV pages with that backend (Mooncake, NIXL,
torch) into a buffer a decode rank process registered (reference/dataplane/adapters.py).
"""

from __future__ import annotations

import random
from types import ModuleType

from reference.dataplane.discovery import BACKENDS
from reference.harness.deep import exploration_checks
from reference.harness.lesson import Lesson, Options
from reference.harness.result import Event, Observation
from reference.lessons.stale_bootstrap.checks import CHECKS
from reference.lessons.stale_bootstrap.world import Outcome, World, open_world, waiting_timeout_text
from reference.sim.check import simulation_check
from reference.status import KVPoll

BEFORE, AFTER = 3, 5
CACHE_KEYS = 1  # one decode rank, one prefill cp rank: one connection_pool key


def _stream(world: World, rooms: list[int], timeline: list[Event], t0: int) -> list[Outcome]:
    outcomes = []
    for step, room in enumerate(rooms):
        world.tick()
        outcome = world.request(room)
        outcomes.append(outcome)
        ports = ",".join(map(str, outcome.ports))
        timeline.append(Event(t0 + step, KVPoll(outcome.status).name, f"room {room} via ports {ports}"))
    return outcomes


def observe(variant: ModuleType, options: Options) -> Observation:
    rooms = random.Random(options.seed).sample(range(1, 1 << 40), BEFORE + AFTER)
    timeline: list[Event] = []
    with open_world(variant, options.transport, options.backend, options.sockets) as world:
        world.start()
        before = _stream(world, rooms[:BEFORE], timeline, 0)
        old_ports = list(world.prefill.rank_ports)
        world.prefill.restart()
        new_ports = list(world.prefill.rank_ports)
        timeline.append(Event(BEFORE, "prefill-restart", f"ports {old_ports} -> {new_ports}"))
        after = _stream(world, rooms[BEFORE:], timeline, BEFORE + 1)
        details = {
            "old_ports": old_ports,
            "new_ports": new_ports,
            "heartbeat_rounds": world.manager.heartbeat_rounds,
            "heartbeat_misses": max(world.manager.heartbeat_failures.values(), default=0),
            "prefill_pids": list(getattr(world.prefill, "pids", [])),
            "backend": options.backend,
            "kv_frames": world.inbox.kv_writes,  # 0 when a real backend wrote the pages
            "sockets": options.sockets,
            "waiting_timeout": waiting_timeout_text(options.transport),
        }
    return _verdict(before, after, new_ports, timeline, details)


def _verdict(
    before: list[Outcome], after: list[Outcome], new_ports: list[int], timeline: list[Event], details: dict
) -> Observation:
    failed = [o for o in after if o.status != KVPoll.Success]
    succeeded = [o for o in after if o.status == KVPoll.Success]
    stale = sorted({port for o in failed for port in o.ports if port not in new_ports})
    details.update(
        successes_after=len(succeeded),
        failures_after=len(failed),
        stale_ports=stale,
        route_fetches_after=sum(o.fetches for o in after),
        bytes_verified=sum(bool(o.bytes_ok) for o in before + after),
        first_failure=failed[0].reason if failed else None,
    )
    warmup = [o for o in before if o.status != KVPoll.Success]
    if warmup:
        return Observation(
            "unknown", f"a request failed before the restart: {warmup[0].reason}", timeline, details
        )
    corrupt = [o.room for o in before + after if o.bytes_ok is False]
    if corrupt:
        return Observation(
            "bug", f"KV bytes of room {corrupt[0]} differ from what the prefill sent", timeline, details
        )
    ports = ", ".join(map(str, stale)) or "?"
    if not succeeded:
        return Observation(
            "bug",
            f"0 of {len(after)} requests succeeded after the prefill restart: decode kept sending to stale "
            f"port(s) {ports} (the prefill now listens on {', '.join(map(str, new_ports))}) and fetched "
            f"/route {details['route_fetches_after']} times; each {_how(failed[0], details)}",
            timeline,
            details,
        )
    first_ok = after.index(succeeded[0])
    if len(failed) > CACHE_KEYS or any(o.status != KVPoll.Success for o in after[first_ok:]):
        return Observation(
            "bug",
            f"{len(failed)} of {len(after)} requests failed after the restart (at most {CACHE_KEYS} per "
            f"cache key expected)",
            timeline,
            details,
        )
    lost = (
        f"after the restart {len(failed)} request sent to stale port(s) {ports} {_how(failed[0], details)}"
        if failed
        else "no request failed after the restart"
    )
    return Observation(
        "ok",
        f"{lost}; then "
        f"{len(succeeded)} of {len(succeeded)} succeeded on new ports {', '.join(map(str, new_ports))} "
        f"after {details['route_fetches_after']} /route fetches; KV bytes verified for "
        f"{details['bytes_verified']} rooms{_over(details)}",
        timeline,
        details,
    )


def _how(failure: Outcome, details: dict) -> str:
    """Which path the stale request took: the waiting timeout (upstream sockets) or a failed send."""
    if "WaitingForInput" in (failure.reason or ""):
        return (
            f"was queued silently and failed on the waiting timeout ({details.get('waiting_timeout', '?')})"
        )
    return "failed its send (fail-fast sockets)"


def _over(details: dict) -> str:
    backend = details.get("backend", "default")
    return "" if backend == "default" else f", written by {backend} (checksums match)"


LESSON = Lesson(
    id="stale-bootstrap",
    title="A restarted prefill's new ports are never re-fetched",
    upstream="PR #36029 (0.5.19)",
    needs=("KVManager", "KVReceiver", "KVManager.try_ensure_parallel_info", "KVManager.listen"),
    body=observe,
    transports=("mock", "loopback"),
    backends=BACKENDS,
    checks=(*CHECKS, simulation_check("stale-bootstrap"), *exploration_checks("stale-bootstrap")),
)
