"""Upstream's `DPDispatcher` on real `zmq.asyncio` sockets (`reference/upstream/dispatcher.py`).

Measured on the 0.5.19 and 0.5.23 wheels: the sockets upstream's dispatch sends on and its
result listener awaits are real pyzmq sockets; the parked listener waits on pyzmq's own
future, held by the socket (so what it awaits, not an adapter object, keeps it alive);
the request timeout is the one upstream's dispatch reads (`encoder/server.py`'s
`ENCODER_REQ_TIMEOUT` from 0.5.19); an exception in upstream's code is raised as an
upstream exception naming its line, never turned into a reply."""

from __future__ import annotations

import asyncio
import gc

import pytest
import zmq.asyncio
from upstream_wheels import wheel

from reference.aioloop import JumpLoop, run_on_jump_loop
from reference.config import DispatcherConfig
from reference.transport.dp_mock import MockWorkerPool
from reference.upstream import load_sglang
from reference.upstream.dispatcher import UpstreamRaised

BOUND = 10.0  # real seconds for anything awaited here


def _on_loop(version: str, config: DispatcherConfig, body) -> object:
    variant = load_sglang(str(wheel(version))).module

    async def main(loop: JumpLoop) -> object:
        pool = MockWorkerPool(2)
        dispatcher = variant.DPDispatcher(pool, config)
        await pool.start()
        dispatcher.start()
        try:
            await loop.settle()
            return await asyncio.wait_for(body(loop, pool, dispatcher), BOUND)
        finally:
            await dispatcher.close()
            await pool.close()

    return run_on_jump_loop(main)


def _reaches(start: object, target: object, limit: int = 5000) -> bool:
    """Whether `target` is reachable from `start` by references (breadth first, bounded)."""
    seen, frontier = {id(start)}, [start]
    while frontier and len(seen) < limit:
        nxt = []
        for obj in frontier:
            for ref in gc.get_referents(obj):
                if ref is target:
                    return True
                if id(ref) not in seen and not isinstance(ref, (str, bytes, int, float, type)):
                    seen.add(id(ref))
                    nxt.append(ref)
        frontier = nxt
    return False


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_upstreams_loops_await_real_zmq_asyncio_sockets(version: str) -> None:
    async def body(loop, pool, dispatcher):
        reply = await dispatcher.dispatch("x", req_id="r1")
        await loop.settle()
        listener = dispatcher.loop_tasks()["_result_listener"]
        waited = listener._fut_waiter  # what the parked listener awaits
        sockets = [*dispatcher.dispatch_sockets, dispatcher.result_socket]
        held = _reaches(dispatcher.result_socket, waited)
        return reply.code, all(isinstance(s, zmq.asyncio.Socket) for s in sockets), held

    code, real, held = _on_loop(version, DispatcherConfig(), body)
    assert code == 200 and real
    assert held, "the listener's pending receive is pyzmq's future, held by the result socket"


def test_the_request_timeout_is_the_one_upstream_reads() -> None:
    async def body(loop, pool, dispatcher):
        await pool.stall(0)
        await pool.stall(1)
        pending = asyncio.ensure_future(dispatcher.dispatch("x", req_id="r1"))
        await loop.advance(5.0)
        return await pending

    reply = _on_loop("0.5.19", DispatcherConfig(req_timeout=5.0), body)
    assert reply.code == 504 and "timed out after 5.0s" in reply.error, reply


def test_an_upstream_exception_is_reported_as_upstreams() -> None:
    async def body(loop, pool, dispatcher):
        dispatcher.dispatch_sockets = None  # upstream's own `self.dispatch_sockets[rank]` raises
        with pytest.raises(UpstreamRaised) as raised:
            await dispatcher.dispatch("x", req_id="r1")
        return str(raised.value)

    text = _on_loop("0.5.19", DispatcherConfig(), body)
    assert text.startswith("upstream raised TypeError in DPDispatcher.dispatch (encoder/runtime.py:"), text
