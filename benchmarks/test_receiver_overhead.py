"""What the `stale-bootstrap` fix (PR #36029) costs a receiver, buggy against fixed.

- the cache-hit path of `_setup_bootstrap_infos`: buggy does an unlocked `in` and an
  index; fixed does one `get` under `connection_lock` and records the generation it
  used (`_connection_pool_entries`). No I/O happens on a hit, so the mock transport
  is enough; this is the number the "< 1% of a set-up" target is about.
- contention (`test_contention.py`): the same path on several threads while one
  thread invalidates;
- one whole receiver set-up on the loopback transport (route fetch for both TP ranks
  over real HTTP, KV-args registration and the metadata send over real ZMQ, to a
  prefill in its own process): the yardstick the cache-hit cost is compared with.
"""

from __future__ import annotations

import pytest

from benchmarks.conftest import label
from benchmarks.loopback_decode import LoopbackDecode
from benchmarks.modes import Mode
from benchmarks.warm_pool import generation, receiver_on, warm_manager
from reference.prefill.loopback import LoopbackPrefill


def _hits(setup, count: int) -> None:
    for _ in range(count):
        setup()


def test_cache_hit(benchmark, variant, mode: Mode) -> None:
    name, module = variant
    manager = warm_manager(module)
    receiver = receiver_on(module, manager, 1)
    label(benchmark, "receiver cache hit (_setup_bootstrap_infos)", name, mode.batch)
    benchmark.pedantic(_hits, args=(receiver._setup_bootstrap_infos, mode.batch), rounds=mode.rounds)
    assert receiver.bootstrap_infos == generation(20000), "every call must have been a cache hit"


@pytest.fixture(scope="module")
def loopback_prefill():
    with LoopbackPrefill(tp_size=2) as prefill:
        yield prefill


def test_loopback_setup(benchmark, variant, mode: Mode, loopback_prefill) -> None:
    """One whole receiver set-up on a cache miss: 2 route fetches, 2 registrations, 2 metadata sends."""
    name, module = variant
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
