"""Fault runs on netns: a decode and a prefill, requests recorded on a history, one nemesis.

    python -m reference.netns.runs --fault partition --variant fixed --report DIR

builds the world of lesson stale-bootstrap (one decode rank, one prefill with two TP
ranks; the heartbeat on a virtual clock, upstream's 5 s interval and 2 misses; the
waiting timeout shortened to 1 s real) on the netns transport, issues requests before,
during and after the fault, ticks the heartbeat past its detection while the fault is
on, heals it, and then looks for what the fault left behind:

- late KV writes: pages of a room that had already failed (and been cleared) written
  after its failure, once the queued metadata reached the prefill after the heal;
- late statuses: Success reports for such rooms (the decode inbox's digests).

The history is checked (`checker.py`: every request invoked after the heal is `ok`;
no request fails with no fault active; none lost) and, with `--report DIR`, written
there as `<fault>-<variant>.json` with its timeline picture `<fault>-<variant>.svg`.
Faults: partition (both ways), one-way (prefill->decode statuses only, /health still
answers), pause (SIGSTOP past the waiting timeout, then SIGCONT), kill (and start again),
restart, bandwidth (tbf 1mbit).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from reference.netns import checker, ns
from reference.netns.history import History
from reference.netns.nemesis import Bandwidth, Kill, Nemesis, Partition, Pause, Restart
from reference.netns.timeline import svg
from reference.status import KVPoll
from reference.variants import SHIPPED, shipped

FAULTS = ("partition", "one-way", "pause", "kill", "restart", "bandwidth")
BEFORE, DURING, AFTER = 2, 2, 3
LATE_WITHIN = 3.0  # real seconds after the heal for queued messages to land


def _nemesis(fault: str, history: History, world: Any) -> Nemesis:
    topology = world.transport.topology
    if fault == "partition":
        return Partition(history, topology, "decode", "prefill-0")
    if fault == "one-way":
        port = int(world.inbox.endpoint.rsplit(":", 1)[1])
        return Partition(history, topology, "decode", "prefill-0", one_way=True, port=port)
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


def run(fault: str, variant_name: str) -> dict[str, Any]:
    from reference.lessons.stale_bootstrap.world import CONFIG, PAGES_PER_REQUEST, open_world

    variant = shipped(variant_name)
    history = History()
    rooms = iter(range(1000, 2000))
    failed: dict[int, int] = {}  # room -> first page, for rooms that ended Failed
    with ExitStack() as stack:
        world = stack.enter_context(open_world(variant.module, "netns"))
        world.start()
        for _ in range(BEFORE):
            _request(history, world, next(rooms))
        with _nemesis(fault, history, world):
            for _ in range(DURING):
                room = next(rooms)
                outcome, page = _request(history, world, room)
                if outcome.status == KVPoll.Failed:
                    failed[room] = page
            for _ in range(CONFIG.heartbeat_max_failures):
                world.tick()  # the heartbeat probes /health: past its detection
        for _ in range(AFTER):
            _request(history, world, next(rooms))
        late_status, late_pages = _late(world, failed, PAGES_PER_REQUEST)
        topology = world.transport.topology
        times = {"setup_s": round(topology.setup_seconds, 3)}
    times["teardown_s"] = round(topology.teardown_seconds, 3)
    late = [] if not (late_status or late_pages) else [
        f"after the heal the prefill reported Success for {len(late_status)} failed, cleared room(s) "
        f"{sorted(late_status)} and wrote KV pages of {len(late_pages)}: {sorted(late_pages)}"
    ]  # fmt: skip
    checked = checker.check(
        history, [checker.after_heal_all_ok, checker.no_fail_without_fault, lambda h: late]
    )
    return {
        "fault": fault, "variant": variant_name, "verdict": checked.verdict, "summary": checked.summary(),
        "failed": checked.failed, "lost": checked.lost, "late_status_rooms": sorted(late_status),
        "late_written_rooms": sorted(late_pages),
        "heartbeat_failures": dict(world.manager.heartbeat_failures),
        **times, "history": history.to_json(), "_history": history,
    }  # fmt: skip


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
            history = result.pop("_history")
            print(f"{fault:10} {name:9} {result['summary']} (set-up {result['setup_s']} s, "
                  f"teardown {result['teardown_s']} s)")  # fmt: skip
            if args.report:
                args.report.mkdir(parents=True, exist_ok=True)
                (args.report / f"{fault}-{name}.json").write_text(json.dumps(result, indent=2, default=str))
                title = f"{fault} on {name}: {result['summary']}"
                (args.report / f"{fault}-{name}.svg").write_text(svg(history, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
