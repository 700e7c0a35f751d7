"""The DP dispatcher on both transports: routing, bounded waits, dead ranks, the sweep.

Every test runs on a `JumpLoop` with upstream's 180 s timeouts: `advance()` makes them
due at once. Worker pools hold their exit waiters (upstream's situation), so buggy and
fixed behave the same here; lesson `task-refs` is where they differ.
"""

from __future__ import annotations

import asyncio

import pytest

import reference.buggy
import reference.fixed
from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.config import DispatcherConfig
from reference.transport.kits import kit

pytestmark = pytest.mark.lesson(id="task-refs")

CONFIG = DispatcherConfig()
REAL_BOUND = 20.0  # real seconds for a live worker process to answer

TRANSPORTS = ["mock", pytest.param("loopback", marks=pytest.mark.loopback)]
VARIANTS = [reference.buggy, reference.fixed]


def run(transport, body, variant=reference.fixed, ranks=2):
    """Start a pool and a dispatcher on a fresh JumpLoop, run `body`, stop both."""

    async def main(loop: JumpLoop):
        pool = kit(transport).worker_pool(ranks)
        dispatcher = variant.DPDispatcher(pool, CONFIG)
        try:
            await pool.start()
            dispatcher.start()
            await loop.settle()
            return await body(loop, pool, dispatcher)
        finally:
            await dispatcher.close()
            await pool.close()

    return run_on_jump_loop(main)


async def wait_answered(*tasks):
    return await asyncio.wait_for(asyncio.gather(*tasks), REAL_BOUND)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_routes_to_fewest_pending_and_round_robins_ties(transport):
    async def body(loop, pool, dispatcher):
        ties = await wait_answered(*(dispatcher.dispatch(f"t{i}") for i in range(4)))
        await pool.stall(0)
        stuck = asyncio.create_task(dispatcher.dispatch("stuck"))
        await loop.settle()
        after = [await wait_answered(dispatcher.dispatch(f"a{i}")) for i in range(3)]
        await loop.advance(CONFIG.req_timeout)
        return [r.rank for r in ties], (await stuck).rank, [r[0].rank for r in after]

    ties, stuck, after = run(transport, body)
    assert ties == [0, 1, 0, 1], "equal load: round-robin"
    assert (stuck, after) == (0, [1, 1, 1]), "rank 0 has one pending: everything else goes to rank 1"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_request_nobody_answers_gets_504_at_the_timeout(transport):
    async def body(loop, pool, dispatcher):
        for rank in range(2):
            await pool.stall(rank)
        request = asyncio.create_task(dispatcher.dispatch("x", req_id="r1"))
        await loop.advance(CONFIG.req_timeout - 1)
        early = request.done()
        await loop.advance(1.5)
        reply = await wait_answered(request)
        return early, reply[0], dict(dispatcher.req_id_to_rank), dispatcher.pending(0)

    early, reply, mappings, pending = run(transport, body)
    assert not early
    assert (reply.code, reply.error) == (504, "DP rank 0 did not answer within 180 s")
    assert (mappings, pending) == ({}, 0), "a timed-out request leaves no mapping and no future"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_dead_rank_is_detected_and_its_requests_fail_fast(transport, variant):
    """Detection bound: one loop settle after the worker is gone (no time passes)."""

    async def body(loop, pool, dispatcher):
        await pool.stall(1)
        requests = [asyncio.create_task(dispatcher.dispatch(f"r{i}")) for i in range(2)]
        await loop.settle()
        await asyncio.wait(requests[:1], timeout=REAL_BOUND)
        await pool.kill(1)
        await loop.settle()
        failed = requests[1].result() if requests[1].done() else None
        later = await wait_answered(dispatcher.dispatch("later"))
        return dispatcher.dead_ranks, failed, dispatcher.all_ranks_alive(), later[0].rank

    dead, failed, healthy, later_rank = run(transport, body, variant)
    assert dead == {1}
    assert failed is not None and (failed.code, failed.error) == (503, "DP rank 1 died")
    assert not healthy
    assert later_rank == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_rank_alive_answers_503_at_once(transport):
    async def body(loop, pool, dispatcher):
        for rank in range(2):
            await pool.kill(rank)
        await loop.settle()
        return await dispatcher.dispatch("x")

    reply = run(transport, body)
    assert (reply.code, reply.error) == (503, "no DP rank alive")


def test_send_goes_to_the_rank_that_encoded_and_drops_the_mapping():
    async def body(loop, pool, dispatcher):
        await asyncio.gather(dispatcher.dispatch("a", "a"), dispatcher.dispatch("b", "b"))
        kept = dict(dispatcher.req_id_to_rank)
        sent = await dispatcher.dispatch_send("b")
        unknown = await dispatcher.dispatch_send("b")
        return kept, sent, unknown, dict(dispatcher.req_id_to_rank)

    kept, sent, unknown, left = run("mock", body)
    assert kept == {"a": 0, "b": 1}
    assert (sent.code, sent.content, sent.rank) == (200, "sent", 1)
    assert unknown.code == 404 and left == {"a": 0}


def test_the_sweep_evicts_mappings_whose_send_never_came():
    async def body(loop, pool, dispatcher):
        await dispatcher.dispatch("a", "a")
        await loop.advance(CONFIG.send_timeout - 1)  # the sweep ran, the mapping is young enough
        before = dict(dispatcher.req_id_to_rank)
        await loop.advance(CONFIG.cleanup_interval)
        return before, dict(dispatcher.req_id_to_rank), dispatcher.evicted

    before, after, evicted = run("mock", body)
    assert CONFIG.cleanup_interval == 45.0, "max(180 / 4, 30), as upstream"
    assert (before, after, evicted) == ({"a": 0}, {}, 1)


def test_a_worker_error_is_passed_on_and_forgets_the_request():
    async def body(loop, pool, dispatcher):
        return await dispatcher.dispatch("fail", "f"), dict(dispatcher.req_id_to_rank)

    reply, mappings = run("mock", body)
    assert (reply.code, reply.error, mappings) == (500, "encoder raised", {})


def test_the_listener_gives_up_after_max_errors_and_fails_everything():
    async def body(loop, pool, dispatcher):
        await pool.stall(0)
        stuck = asyncio.create_task(dispatcher.dispatch("x"))
        await loop.settle()
        pool.recv_errors = CONFIG.listener_max_errors  # from the listener's next receive on
        (served,) = await wait_answered(dispatcher.dispatch("y"))
        for _ in range(CONFIG.listener_max_errors):
            await loop.advance(1.0)  # each back-off is min(0.1 * n, 1) s
        (stuck_reply,) = await wait_answered(stuck)
        return served, dispatcher.all_ranks_alive(), stuck_reply, await dispatcher.dispatch("z")

    served, healthy, stuck, later = run("mock", body)
    assert served.code == 200 and not healthy
    assert (stuck.code, stuck.error) == (503, "result listener failed")
    assert (later.code, later.error) == (503, "result listener failed")


def test_bad_pool_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="unknown transport 'udp'"):
        kit("udp")
    with pytest.raises(ValueError, match="at least one rank"):
        kit("mock").worker_pool(0)
    with pytest.raises(ValueError, match="timeouts must be positive"):
        DispatcherConfig(req_timeout=0)
