"""Cache hits on several threads while one thread invalidates (lesson `stale-bootstrap`).

1, 2 and 8 threads each take cache hits through their own receiver (as concurrent
requests do) while one more thread invalidates the pool entry, sleeping ~100 us in
between. The invalidator does the same in both forms, what `_handle_node_failure` and
a re-fetch do to the pool: under `connection_lock`, drop the key and install a new
generation. Reported as aggregate ops/s (and ns/op) per variant.

CPython runs one thread at a time; a busy thread gives way only every switch interval
(5 ms by default), so by default the invalidator gets in rarely and the buggy form's
unlocked `in`/index pair is almost never split. The second set of cases lowers the
switch interval to 10 us, as the stress mode does, so threads interleave finely: a
buggy reader can then fall between the invalidator's two steps (a `KeyError` on the
index, or a spurious miss) and a fixed reader can find the lock held. Those events are
counted in the results, not hidden. A miss runs the variant's real miss path with the
route fetch and registration replaced by the same in-process stand-ins in both forms.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

import pytest

from benchmarks.conftest import label
from benchmarks.modes import Mode
from benchmarks.warm_pool import KEY, generation, receiver_on, warm_manager

JOIN_BOUND = 60.0
SWITCHES = {"": None, ", switch 10us": 1e-5}


class Invalidator:
    def __init__(self, manager) -> None:
        self.manager, self.stop, self.count = manager, threading.Event(), 0
        self.thread = threading.Thread(target=self._run, name="invalidator")

    def _run(self) -> None:
        while not self.stop.wait(0.0001):
            with self.manager.connection_lock:
                self.manager.connection_pool.pop(KEY, None)
                self.manager.connection_pool[KEY] = generation(20000 + 2 * (self.count % 100))
            self.count += 1


class Contention:
    """One round: fresh pool and receivers (untimed), then the threads race (timed)."""

    def __init__(self, module: ModuleType, threads: int, hits: int) -> None:
        self.module, self.threads, self.hits = module, threads, hits
        self.tally = {"key_errors": 0, "spurious_misses": 0, "invalidations": 0}

    def prepare(self) -> tuple[tuple, dict]:
        manager = warm_manager(self.module)
        self.misses: list[int] = []
        receivers = [receiver_on(self.module, manager, room, self.misses) for room in range(self.threads)]
        self.invalidator = Invalidator(manager)
        self.workers = [threading.Thread(target=self._hit_loop, args=(r,)) for r in receivers]
        return (), {}

    def _hit_loop(self, receiver) -> None:
        for _ in range(self.hits):
            try:
                receiver._setup_bootstrap_infos()
            except KeyError:
                self.tally["key_errors"] += 1

    def race(self) -> None:
        self.invalidator.thread.start()
        for worker in self.workers:
            worker.start()
        for worker in self.workers:
            worker.join(JOIN_BOUND)
        self.invalidator.stop.set()
        self.invalidator.thread.join(JOIN_BOUND)
        self.tally["spurious_misses"] += len(self.misses)
        self.tally["invalidations"] += self.invalidator.count


@pytest.mark.parametrize("switch", list(SWITCHES), ids=["default-switch", "switch-10us"])
@pytest.mark.parametrize("threads", [1, 2, 8], ids=lambda n: f"{n}-threads")
def test_contention(benchmark, variant, mode: Mode, threads: int, switch: str) -> None:
    name, module = variant
    if threads not in mode.thread_counts:
        pytest.skip(f"{threads} threads not in the {mode.name} mode")
    contention = Contention(module, threads, mode.contention_hits)
    label(
        benchmark,
        f"cache hits under invalidation/{threads}-threads{switch}",
        name,
        threads * mode.contention_hits,
    )
    previous = sys.getswitchinterval()
    if SWITCHES[switch] is not None:
        sys.setswitchinterval(SWITCHES[switch])
    try:
        benchmark.pedantic(contention.race, setup=contention.prepare, rounds=max(1, mode.rounds // 10))
    finally:
        sys.setswitchinterval(previous)
    benchmark.extra_info.update(threads=threads, **contention.tally)
