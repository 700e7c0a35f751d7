"""The upstream adapter's receiver and its bound stand-ins.

Upstream's own `CommonKVReceiver` on the mock network: identity-safe invalidation
through upstream's waiting timeout (0.5.19 keeps a newer generation another receiver
installed; 0.5.18 never drops anything), and the stand-ins of `bound.py`, which route
upstream's `time.time()`, `GET /route`, `GET /health` (scripted answers under upstream's
own timeout) and `asyncio.sleep` to the scenario only while bound, on the bound thread.
"""

import asyncio
import threading
import time

import pytest
import requests
from mock_world import ADDR, KEY, world
from upstream_wheels import wheel

from reference.clock import VirtualClock
from reference.status import KVPoll
from reference.transport.base import Reply
from reference.transport.mock import Answer, HealthNetwork, MockNetwork
from reference.upstream import load_sglang
from reference.upstream.bound import ClockedTime, TickedAsyncio, TransportRequests, bound


def _timed_out_pair(version):
    """r1 and r2 share generation 1; the prefill restarts; both send (queued, never
    delivered); r1 times out, then r3 starts, then r2 times out. What is cached?"""
    variant = load_sglang(str(wheel(version))).module
    _net, prefill, manager, clock = world(variant)
    try:
        r1, r2 = (variant.KVReceiver(manager, ADDR, room) for room in (1, 2))
        for r in (r1, r2):
            r.init(0)
        first = manager.connection_pool[KEY]
        prefill.restart()
        for r in (r1, r2):
            r.send_metadata([0, 1])
        clock.advance(manager.waiting_timeout)
        assert r1.poll() == KVPoll.Failed
        r3 = variant.KVReceiver(manager, ADDR, 3)
        r3.init(0)
        assert r2.poll() == KVPoll.Failed
        return first, manager.connection_pool.get(KEY), r3, prefill.rank_ports
    finally:
        manager.close()


@pytest.mark.upstream
def test_0_5_19_timeout_keeps_the_generation_another_receiver_installed():
    first, cached, r3, new_ports = _timed_out_pair("0.5.19")
    assert cached is not first and cached is r3._connection_pool_entries[KEY]
    assert [info["rank_port"] for info in cached] == new_ports


@pytest.mark.upstream
def test_0_5_18_timeout_drops_nothing():
    first, cached, r3, new_ports = _timed_out_pair("0.5.18")
    assert cached is first
    assert not {info["rank_port"] for info in r3.bootstrap_infos} & set(new_ports)


def test_the_parallel_info_keeps_only_the_fields_the_bound_version_knows():
    """0.5.11's decode builds its PrefillServerInfo from every key it gets; our server
    answers as the newest upstream does, so the answer is cut to that version's fields."""
    net, upstream_requests = MockNetwork(), TransportRequests()
    net.add_prefill("10.0.0.1:8998")
    net.serve("10.0.0.1:8998", lambda _m, _p, _q, _b: Reply(200, {"attn_tp_size": 1, "prefill_http_port": 1}))
    every_rank = "prefill_dp_rank=-1&prefill_cp_rank=-1&target_tp_rank=-1&target_pp_rank=-1"
    with bound(transport=net, info_fields=frozenset({"attn_tp_size"})):
        reply = upstream_requests.get(f"http://10.0.0.1:8998/route?{every_rank}", timeout=5)
    assert reply.json() == {"attn_tp_size": 1}
    with bound(transport=net):
        assert (
            upstream_requests.get(f"http://10.0.0.1:8998/route?{every_rank}").json()["prefill_http_port"] == 1
        )


def test_time_reads_the_bound_clock_on_the_bound_thread_only():
    clock, upstream_time, seen = VirtualClock(start=42.0), ClockedTime(), []
    with bound(now=clock.now):
        other = threading.Thread(target=lambda: seen.append(upstream_time.time()))
        other.start()
        other.join(5)
        assert upstream_time.time() == 42.0
    assert abs(seen[0] - time.time()) < 60 and abs(upstream_time.time() - time.time()) < 60


def test_get_route_goes_through_the_bound_transport():
    net, upstream_requests = MockNetwork(), TransportRequests()
    net.add_prefill("10.0.0.1:8998")
    net.serve(
        "10.0.0.1:8998", lambda _m, _p, query, _b: Reply(200, {"rank_ip": "10.0.0.1", "rank_port": 5001})
    )
    session = upstream_requests.Session()
    with bound(transport=net):
        url = (
            "http://10.0.0.1:8998/route?prefill_dp_rank=0&prefill_cp_rank=0&target_tp_rank=1&target_pp_rank=0"
        )
        response = session.get(url, timeout=5)
        assert (response.status_code, response.json()) == (200, {"rank_ip": "10.0.0.1", "rank_port": 5001})
        assert net.route_fetches == 1
        net.kill("10.0.0.1:8998")
        with pytest.raises(requests.ConnectionError, match="connection refused"):
            upstream_requests.get(url, timeout=5)


def test_health_answers_a_transport_scripts_meet_upstreams_own_timeout():
    """A transport that scripts `/health` answers: upstream's call gets their status, and a
    connect or an answer later than the `timeout` upstream passes raises what requests does."""
    net, upstream_requests = HealthNetwork(), TransportRequests()
    net.add_prefill(ADDR)
    net.script(ADDR, [Answer(503), Answer(connect=2.5), Answer(read=3.5), Answer(read=3.5)])
    session, url = upstream_requests.Session(), f"http://{ADDR}/health"
    with bound(transport=net):
        assert session.get(url, timeout=(2, 3)).status_code == 503
        with pytest.raises(requests.ConnectTimeout):
            session.get(url, timeout=(2, 3))
        with pytest.raises(requests.ReadTimeout):
            session.get(url, timeout=(2, 3))
        assert session.get(url, timeout=(2, 4)).status_code == 200  # answered within 4 s
        assert session.get(url, timeout=(2, 3)).status_code == 200  # the script is spent
        net.kill(ADDR)
        with pytest.raises(requests.ConnectionError, match="connection refused"):
            session.get(url, timeout=(2, 3))


def test_sleep_waits_for_the_bound_ticks_and_counts():
    class OneTick:
        interval = 120.0

        async def next_tick(self):
            await asyncio.sleep(0)

    rounds, upstream_asyncio = [], TickedAsyncio()

    async def cleanup_round():
        started = asyncio.get_running_loop().time()
        await upstream_asyncio.sleep(120.0)
        return asyncio.get_running_loop().time() - started

    with bound(ticks=OneTick(), on_sleep=lambda: rounds.append(1)):
        assert asyncio.run(cleanup_round()) < 60  # the tick, not 120 s
    assert rounds == [1]


@pytest.mark.upstream
@pytest.mark.parametrize("version", ["0.5.18", "0.5.19"])
def test_the_code_each_fix_changed_is_upstreams(version):
    """What decides `stale-bootstrap` and `task-refs` is executed from the wheel and
    never overridden by the adapter (`__init__` and `_run_server` are wrapped, calling
    upstream's, only to bind the scenario's clock, loop and ticks)."""
    module = load_sglang(str(wheel(version))).module
    wheel_file = f"<sglang-{version}>/sglang/srt/disaggregation/common/conn.py"
    receiver = ["_setup_bootstrap_infos", "_check_waiting_timeout", "clear", "_send_abort_notification"]
    if version == "0.5.19":
        receiver.append("invalidate_cached_bootstrap_infos")
    for cls, names in ((module.KVReceiver, receiver), (module.BootstrapServer, ["_cleanup_expired_entries"])):
        for name in names:
            assert getattr(cls, name).__code__.co_filename == wheel_file, (cls, name)
    assert module.BootstrapServer.__mro__[2]._run_server.__code__.co_filename == wheel_file
