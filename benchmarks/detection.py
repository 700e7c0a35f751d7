"""Failure detection time against heartbeat interval and max failures.

The decode manager's heartbeat probes each prefill's `/health` every `interval` and
fails the prefill's rooms after `max_failures` failed probes in a row. A prefill killed
at an arbitrary instant is therefore detected after (max_failures - 1) x interval to
max_failures x interval, plus the time to fail its rooms; the target allows one more
interval of slack: detection <= interval x max_failures + interval.

This runs the real heartbeat thread on the real clock with short intervals against
the mock health source (a `MockNetwork` whose prefill stops answering at a known
instant, picked at a seeded random phase of the heartbeat). The clock is read when the
`node_failure.after_room` hook sees the last tracked room Failed.
"""

from __future__ import annotations

import importlib
import random
import statistics
import threading
import time
from typing import Any

from benchmarks.modes import Mode
from reference.clock import RealClock
from reference.config import ManagerConfig
from reference.hooks import Hooks
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
ROOMS = 8


def detect_once(variant: str, interval: float, failures: int, phase: float) -> float | None:
    """Seconds from killing the prefill until all its rooms are Failed; None if never."""
    module = importlib.import_module(f"reference.{variant}")
    net, hooks = MockNetwork(), Hooks()
    config = ManagerConfig(heartbeat_interval=interval, heartbeat_max_failures=failures)
    manager = module.KVManager(net, config, RealClock(), hooks)
    net.add_prefill(ADDR)
    manager.add_prefill(ADDR)
    for room in range(ROOMS):
        manager.track_room(ADDR, room)
        manager.update_status(room, KVPoll.WaitingForInput)
    all_failed = threading.Event()
    failed_at: list[float] = []

    def after_room(_addr: str, _room: int) -> None:
        if not all_failed.is_set() and all(manager.request_status[r] == KVPoll.Failed for r in range(ROOMS)):
            failed_at.append(time.perf_counter())
            all_failed.set()

    hooks.set("node_failure.after_room", after_room)
    manager.start_heartbeat()
    try:
        time.sleep(phase)  # a real-time benchmark: the kill lands at an arbitrary heartbeat phase
        killed_at = time.perf_counter()
        net.kill(ADDR)
        detected = all_failed.wait(interval * (failures + 1) * 3 + 1.0)
    finally:
        manager.close()
    return failed_at[0] - killed_at if detected else None


def sweep(mode: Mode, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    configs = []
    for interval in mode.detection_intervals:
        for failures in mode.detection_failures:
            bound = interval * failures + interval
            for variant in ("buggy", "fixed"):
                # The kill lands after at least one successful probe, at a random phase.
                phases = [interval * (1 + rng.random()) for _ in range(mode.detection_repeats)]
                times = [detect_once(variant, interval, failures, phase) for phase in phases]
                configs.append(_summarise(variant, interval, failures, bound, times))
    return {"seed": seed, "rooms": ROOMS, "configs": configs}


def _summarise(
    variant: str, interval: float, failures: int, bound: float, times: list[float | None]
) -> dict[str, Any]:
    seen = [t for t in times if t is not None]
    return {
        "variant": variant,
        "interval_s": interval,
        "max_failures": failures,
        "bound_s": bound,
        "expected_range_s": [interval * (failures - 1), interval * failures],
        "detection_s": times,
        "median_s": statistics.median(seen) if seen else None,
        "max_s": max(seen) if seen else None,
        "undetected": len(times) - len(seen),
        "within_bound": bool(seen) and len(seen) == len(times) and max(seen) <= bound,
    }
