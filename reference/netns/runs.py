"""Fault runs on netns: a decode and a prefill, requests recorded on a history, one nemesis.

    python -m reference.netns.runs --fault partition --variant fixed --report DIR

builds the world of lesson stale-bootstrap (one decode rank, one prefill with two TP
ranks; the heartbeat on a virtual clock, upstream's 5 s interval and 2 misses; the
waiting timeout shortened to 1 s real; 15 s for the requests after the heal, which may
wait out TCP's retransmission back-off) on the netns transport, issues requests before,
during and after the fault, ticks the heartbeat past its detection while the fault is
on (and issues one more request after that), heals it, and then looks for what the fault left behind:

- late KV writes: pages of a room that had already failed (and been cleared) written
  after its failure, once the queued metadata reached the prefill after the heal;
- late statuses: Success reports for such rooms (the decode inbox's digests).

The history is checked (`checker.py`: every request invoked after the heal is `ok`;
no request fails with no fault active; none lost) and, with `--report DIR`, written
there as `<fault>-<variant>.json` with its timeline picture `<fault>-<variant>.svg`.
Faults: partition (both ways), one-way (prefill->decode statuses only, /health still
answers), bootstrap (decode->prefill packets to the bootstrap port only: the ranks stay
reachable, so no request need fail), pause (SIGSTOP past the waiting timeout, then
SIGCONT), kill (and start again), restart, bandwidth (tbf 1mbit).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

from reference.harness.result import Event, Observation
from reference.netns import checker, ns
from reference.netns.history import History
from reference.netns.nemesis import Bandwidth, Kill, Nemesis, Partition, Pause, Restart
from reference.netns.timeline import svg
from reference.status import KVPoll
from reference.variants import SHIPPED, shipped

FAULTS = ("partition", "one-way", "bootstrap", "pause", "kill", "restart", "bandwidth")
BEFORE, DURING, AFTER = 2, 2, 3
# A paused prefill answers no HTTP either (each /route fetch waits out its 5 s timeout):
# one request under the pause, none after the probes, shows all it has to show.
PAUSE_DURING = 1
LATE_WITHIN = 3.0  # real seconds after the heal for queued messages to land
HEALED_WAIT = 15.0  # real seconds a request after the heal may wait for its answer (below)


def _nemesis(fault: str, history: History, world: Any) -> Nemesis:
    topology = world.transport.topology
    if fault == "partition":
        return Partition(history, topology, "decode", "prefill-0")
    if fault == "one-way":
        port = int(world.inbox.endpoint.rsplit(":", 1)[1])
        return Partition(history, topology, "decode", "prefill-0", one_way=True, port=port)
    if fault == "bootstrap":  # the bootstrap server alone: decode's packets to its port only
        port = int(world.addr.rsplit(":", 1)[1])
        return Partition(history, topology, "prefill-0", "decode", one_way=True, port=port)
    if fault == "pause":
        return Pause(history, world.prefill)
    if fault == "kill":
        return Kill(history, world.prefill)
    if fault == "restart":
        return Restart(history, world.prefill)
    return Bandwidth(history, topology, "prefill-0")


def _request(history: History, world: Any, room: int) -> tuple[Any, int]:
    op = history.invoke("decode", "request", room)
    page = world._next_page  # the pages this request writes into (the world's ring)
    world.manager.try_ensure_parallel_info(world.addr)  # as upstream's decode queue, per request
    outcome = world.request(room)
    if outcome.status == KVPoll.Success and outcome.bytes_ok:
        history.complete(op, "ok", list(outcome.ports))
    elif outcome.status == KVPoll.Success:
        history.complete(op, "fail", list(outcome.ports), "Success with wrong KV bytes")
    else:
        history.complete(op, "fail", list(outcome.ports), outcome.reason or "waiting timeout")
    return outcome, page


def run(fault: str, variant: str | ModuleType) -> dict[str, Any]:
    """One fault run against a shipped variant (by name) or a variant module."""
    from reference.lessons.stale_bootstrap.world import CONFIG, PAGES_PER_REQUEST, open_world

    module = shipped(variant).module if isinstance(variant, str) else variant
    variant_name = variant if isinstance(variant, str) else module.__name__
    history = History()
    rooms = iter(range(1000, 2000))
    failed: dict[int, int] = {}  # room -> first page, for rooms that ended Failed
    with ExitStack() as stack:
        world = stack.enter_context(open_world(module, "netns"))
        world.start()
        for _ in range(BEFORE):
            _request(history, world, next(rooms))
        with _nemesis(fault, history, world):
            for _ in range(PAUSE_DURING if fault == "pause" else DURING):
                room = next(rooms)
                outcome, page = _request(history, world, room)
                if outcome.status == KVPoll.Failed:
                    failed[room] = page
            for _ in range(CONFIG.heartbeat_max_failures):
                world.tick()  # the heartbeat probes /health: past its detection
            if fault != "pause":
                _request(history, world, next(rooms))  # one more, after the heartbeat's verdict
            held = _in_doubt(world)  # pages the variant keeps out of use, when the fault heals
        # After a partition, the prefill's TCP connection to the decode is in retransmission
        # back-off (its queued frames go out at the next retry, seconds later): a request
        # after the heal waits up to HEALED_WAIT real seconds, not the shortened 1 s.
        world.answer_within = HEALED_WAIT
        for _ in range(AFTER):
            _request(history, world, next(rooms))
        late_status, late_pages = _late(world, failed, PAGES_PER_REQUEST)
        topology = world.transport.topology
        times = {"setup_s": round(topology.setup_seconds, 3)}
    times["teardown_s"] = round(topology.teardown_seconds, 3)
    freed = sorted(room for room in late_pages if not _pages_of(failed[room], PAGES_PER_REQUEST) <= held)
    late = [] if not freed else [
        f"after the heal the prefill wrote the KV pages of {len(freed)} failed, cleared room(s) {freed}, "
        "pages the decode had freed for reuse"
    ]  # fmt: skip
    invariants = [checker.after_heal_all_ok, checker.no_fail_without_fault, lambda h: late]
    if fault == "bootstrap":  # the ranks stay reachable and the route is cached: nothing need fail
        invariants.append(checker.none_fail_while_ranks_reachable)
    checked = checker.check(history, invariants)
    return {
        "fault": fault, "variant": variant_name, "verdict": checked.verdict, "summary": checked.summary(),
        "failed": checked.failed, "lost": checked.lost, "late_status_rooms": sorted(late_status),
        "late_written_rooms": sorted(late_pages), "late_written_while_freed": freed,
        "after_heal_wait_s": HEALED_WAIT,
        "pages_held_at_heal": sorted(held),
        "heartbeat_failures": dict(world.manager.heartbeat_failures),
        **times, "history": history.to_json(), "_history": history,
    }  # fmt: skip


def _in_doubt(world: Any) -> set[int]:
    report = getattr(world.manager, "pages_in_doubt", None)  # see lesson late-kv-write
    return set(report()) if report is not None else set()


def _pages_of(first: int, count: int) -> set[int]:
    return set(range(first, first + count))


def observe(fault: str, variant: ModuleType) -> Observation:
    """A lesson's story on netns: one fault run, its history checked, as an Observation."""
    result = run(fault, variant)
    history: History = result.pop("_history")
    timeline = [Event(op.invoked, f"{op.f} {op.value}: {op.type}", op.why) for op in history.ops]
    timeline += [
        Event(f.started, f"fault: {f.name}", f"healed at {f.healed or 0.0:.2f} s") for f in history.faults
    ]
    timeline.sort(key=lambda e: e.t)
    details = dict(result)  # the history too: `python -m reference --report DIR` draws it
    details["picture"] = f"python -m reference.netns.runs --fault {fault} --report DIR"
    return Observation(result["verdict"], f"on netns, {result['summary']}", timeline, details)


def _late(world: Any, failed: dict[int, int], pages: int) -> tuple[set[int], set[int]]:
    """Rooms that failed and were cleared, yet got a Success report or KV bytes afterwards."""
    deadline = time.monotonic() + LATE_WITHIN
    while time.monotonic() < deadline:
        statuses = {room for (room, _rank) in world.inbox.reported_digests if room in failed}
        if len(statuses) == len(failed):
            break
        time.sleep(0.05)  # bounded: queued messages from the prefill, if any, arrive now
    written = set()
    for room, first in failed.items():
        for region in range(world.memory.regions):
            ptrs = [world.memory.page_ptr(region, p) for p in range(first, first + pages)]
            if any(any(world.memory.read(ptr, 8)) for ptr in ptrs):
                written.add(room)
    return statuses, written


def _recorded(fault: str, variant: str) -> dict[str, Any]:
    """Where a reported run came from: when, the command, the machine's load."""
    return {
        "utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "command": f"python -m reference.netns.runs --fault {fault} --variant {variant} --report DIR",
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference.netns.runs")
    parser.add_argument("--fault", choices=FAULTS, action="append")
    parser.add_argument("--variant", choices=sorted(SHIPPED), action="append")
    parser.add_argument(
        "--report", type=Path, help="write each run's history and timeline (.json, .svg) here"
    )
    args = parser.parse_args(argv)
    reason = ns.unavailable()
    if reason:
        print(f"{parser.prog}: error: {reason}", file=sys.stderr)
        return 2
    for fault in args.fault or ["partition"]:
        for name in args.variant or ["fixed"]:
            result = run(fault, name)
            result.pop("_history")
            print(f"{fault:10} {name:9} {result['summary']} (set-up {result['setup_s']} s, "
                  f"teardown {result['teardown_s']} s)")  # fmt: skip
            if args.report:
                args.report.mkdir(parents=True, exist_ok=True)
                result["recorded"] = _recorded(fault, name)
                (args.report / f"{fault}-{name}.json").write_text(json.dumps(result, indent=2, default=str))
                title = f"{fault} on {name}: {result['summary']}"  # as report.picture draws it
                (args.report / f"{fault}-{name}.svg").write_text(
                    svg(History.from_json(result["history"]), title)
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
