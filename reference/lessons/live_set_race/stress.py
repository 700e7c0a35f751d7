"""Stress mode of `live-set-race`: no hooks, real threads, a lowered switch interval.

Each trial tracks many rooms on one prefill, then races `_handle_node_failure` on one
thread against a mori-style status thread that finishes a seeded sample of rooms and
cleans their tracking. The race fires when the cleanup fetched the live set before the
failure handler popped it and discards while the handler iterates. We report how often
that happened, with the seed, so a reader sees the race is real but rare, and why a
deterministic hook is the right tool for the verdict: `--repeat N` adds this rate to
the hooked scenario's verdict and never replaces it (zero fires proves nothing).
"""

from __future__ import annotations

import random
import sys
import threading
from types import ModuleType

from reference.harness import progress
from reference.harness.lesson import Options
from reference.harness.result import Observation
from reference.hooks import Hooks
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
ROOMS, FINISHING = 2000, 1000
JOIN_BOUND = 10.0


def _trial(variant: ModuleType, rng: random.Random) -> str | None:
    manager = variant.KVManager(MockNetwork(), hooks=Hooks())
    manager.add_prefill(ADDR)
    for room in range(ROOMS):
        manager.track_room(ADDR, room)
    finishing = rng.sample(range(ROOMS), FINISHING)
    errors: list[BaseException] = []
    start = threading.Barrier(2, timeout=JOIN_BOUND)

    def fail_prefill() -> None:
        start.wait()
        try:
            manager._handle_node_failure(ADDR)
        except RuntimeError as exc:
            errors.append(exc)

    def finish_rooms() -> None:
        start.wait()
        for room in finishing:
            manager.update_status(room, KVPoll.Success)
            manager._cleanup_room_tracking(room)

    threads = [threading.Thread(target=fail_prefill), threading.Thread(target=finish_rooms)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_BOUND)
    return f"{type(errors[0]).__name__}: {errors[0]}" if errors else None


def stress(variant: ModuleType, options: Options) -> Observation:
    rng = random.Random(options.seed)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        fired: list[str] = []
        progress.trial(0, options.repeat, 0)
        for done in range(1, options.repeat + 1):
            if error := _trial(variant, rng):
                fired.append(error)
            progress.trial(done, options.repeat, len(fired))
    finally:
        sys.setswitchinterval(previous)
    rate = f"{len(fired)}/{options.repeat} trials ({len(fired) / options.repeat:.1%}), seed {options.seed}"
    details = {"fired": len(fired), "trials": options.repeat, "seed": options.seed}
    if fired:
        return Observation("bug", f"race fired in {rate}: {fired[0]}", details=details)
    return Observation("ok", f"race never fired in {rate}", details=details)
