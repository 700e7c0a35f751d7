"""What the `stale-bootstrap` fix (PR #36029) costs a receiver, buggy against fixed.

- the cache-hit path of `_setup_bootstrap_infos`: buggy does an unlocked `in` and an
  index; fixed does one `get` under `connection_lock` and records the generation it
  used (`_connection_pool_entries`). No I/O happens on a hit, so the mock transport
  is enough; this is the number the "< 1% of a set-up" target is about.
- contention: 1, 2 and 8 threads take cache hits (each with its own receiver, as
  concurrent requests do) while one more thread invalidates the entry every ~100 us.
  The invalidator does the same in both forms, what `_handle_node_failure` and a
  re-fetch do to the pool: under the lock, drop the key and install a new generation.
  Reported as ops/s. A buggy reader can fall into the unlocked window between the two
  (a `KeyError` on the index, or a spurious miss): those are counted, not hidden. A
  miss runs the variant's real miss path with the route fetch and registration
  replaced by in-process stand-ins, identical in both forms, so no I/O is timed.
- one whole receiver set-up on the loopback transport (route fetch for both TP ranks
  over real HTTP, KV-args registration and the metadata send over real ZMQ, to a
  prefill in its own process): the yardstick the cache-hit cost is compared with.
"""

from __future__ import annotations

import threading
from types import ModuleType

import pytest

from benchmarks.conftest import label
from benchmarks.modes import Mode
from reference.hooks import Hooks

ADDR = "10.0.0.1:8998"
KEY = f"{ADDR}_0_0_0"


def _needs_receiver(module: ModuleType) -> None:
    if not hasattr(module, "KVReceiver"):
        pytest.skip("this checkout has no KVReceiver yet (bootstrap branch not merged)")


def _generation(port: int) -> list[dict]:
    return [
        {"rank_ip": "127.0.0.1", "rank_port": port + tp, "pp_rank": 0, "is_dummy": False, "tp_rank": tp,
         "cp_rank": 0, "region": tp}
        for tp in range(2)
    ]  # fmt: skip


def _warm_manager(module: ModuleType):
    from reference.transport.mock import MockNetwork

    manager = module.KVManager(MockNetwork(), hooks=Hooks())
    manager.add_prefill(ADDR)
    manager.connection_pool[KEY] = _generation(20000)
    return manager


def _receiver(module: ModuleType, manager, room: int, misses: list[int] | None = None):
    receiver = module.KVReceiver(manager, ADDR, room)
    receiver.target_tp_ranks = [0, 1]  # as init() maps a 2-rank prefill onto 1 decode rank
    if misses is not None:  # the miss path without I/O: same stand-ins for both forms
        receiver._fetch_bootstrap_infos = lambda _cp: misses.append(1) or _generation(30000)
        receiver._register_kv_args = lambda: True
    return receiver


def _hits(setup, count: int) -> None:
    for _ in range(count):
        setup()


def test_cache_hit(benchmark, variant, mode: Mode) -> None:
    name, module = variant
    _needs_receiver(module)
    manager = _warm_manager(module)
    receiver = _receiver(module, manager, 1)
    label(benchmark, "receiver cache hit (_setup_bootstrap_infos)", name, mode.batch)
    benchmark.pedantic(_hits, args=(receiver._setup_bootstrap_infos, mode.batch), rounds=mode.rounds)
    assert receiver.bootstrap_infos == _generation(20000), "every call must have been a cache hit"


class Invalidator:
    """Every ~100 us: drop the key and install a new generation, both under the lock."""

    def __init__(self, manager) -> None:
        self.manager, self.stop, self.count = manager, threading.Event(), 0
        self.thread = threading.Thread(target=self._run, name="invalidator")

    def _run(self) -> None:
        while not self.stop.wait(0.0001):
            with self.manager.connection_lock:
                self.manager.connection_pool.pop(KEY, None)
                self.manager.connection_pool[KEY] = _generation(20000 + 2 * (self.count % 100))
            self.count += 1


def _contend(module: ModuleType, threads: int, hits: int, tally: dict[str, int]) -> None:
    manager = _warm_manager(module)
    misses: list[int] = []
    receivers = [_receiver(module, manager, room, misses) for room in range(threads)]
    errors: list[str] = []

    def hit_loop(receiver) -> None:
        for _ in range(hits):
            try:
                receiver._setup_bootstrap_infos()
            except KeyError:
                errors.append("KeyError")

    invalidator = Invalidator(manager)
    workers = [threading.Thread(target=hit_loop, args=(r,)) for r in receivers]
    invalidator.thread.start()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    invalidator.stop.set()
    invalidator.thread.join(5)
    tally["key_errors"] += len(errors)
    tally["spurious_misses"] += len(misses)
    tally["invalidations"] += invalidator.count


@pytest.mark.parametrize("threads", [1, 2, 8], ids=lambda n: f"{n}-threads")
def test_contention(benchmark, variant, mode: Mode, threads: int) -> None:
    name, module = variant
    _needs_receiver(module)
    if threads not in mode.thread_counts:
        pytest.skip(f"{threads} threads not in the {mode.name} mode")
    tally = {"key_errors": 0, "spurious_misses": 0, "invalidations": 0}
    label(benchmark, f"cache hits under invalidation/{threads}-threads", name, threads * mode.contention_hits)
    rounds = max(1, mode.rounds // 40)
    benchmark.pedantic(_contend, args=(module, threads, mode.contention_hits, tally), rounds=rounds)
    benchmark.extra_info.update(threads=threads, **tally)


@pytest.fixture(scope="module")
def loopback_prefill():
    try:
        from reference.prefill.loopback import LoopbackPrefill
    except ImportError:
        pytest.skip("this checkout has no loopback prefill yet (bootstrap branch not merged)")
    with LoopbackPrefill(tp_size=2) as prefill:
        yield prefill


def test_loopback_setup(benchmark, variant, mode: Mode, loopback_prefill) -> None:
    """One whole receiver set-up on a cache miss: 2 route fetches, 2 registrations, 2 metadata sends."""
    from benchmarks.loopback_decode import LoopbackDecode

    name, module = variant
    _needs_receiver(module)
    with LoopbackDecode(module, loopback_prefill, slots=1) as decode:
        rooms = iter(range(1, 1_000_000))

        def setup():
            decode.finish_pending()
            decode.forget_cache()
            return (next(rooms),), {}

        label(benchmark, "receiver set-up on a miss (loopback)", name, 1)
        benchmark.pedantic(decode.set_up, setup=setup, rounds=mode.setup_rounds, warmup_rounds=1)
        decode.finish_pending()
        benchmark.extra_info.update(succeeded=decode.succeeded, failed=decode.failed)
    assert decode.failed == 0, "every set-up on a live prefill must succeed"
