"""The receiver's `connection_pool` cache (lesson `stale-bootstrap`, PR #36029).

The five behaviours upstream's `test_receiver_connection_pool.py` pins down, written
fresh against our receiver on the mock network, each run on both forms: the fixed
form holds the behaviour, the buggy form shows the pre-fix symptom. A by-key
invalidation (equality instead of identity) is run too, to show the identity test
can fail. Then the other invalidation triggers (fetch, registration) and the connect
that escapes the try in the buggy form.
"""

import threading
from types import SimpleNamespace

import pytest
from mock_world import ADDR, BY_KEY, KEY, receiver, request, world

import reference.buggy
import reference.fixed
from reference import wire
from reference.status import KVPoll
from reference.transport.base import TransportError

pytestmark = pytest.mark.lesson(id="stale-bootstrap")


# -- 1. a failed send removes the generation this receiver used --
def test_fixed_failed_send_removes_the_stale_generation():
    _net, prefill, manager, _ = world(reference.fixed)
    r = receiver(reference.fixed, manager, 1)
    assert manager.connection_pool[KEY] is r._connection_pool_entries[KEY]
    prefill.restart()
    r.send_metadata([0, 1])
    assert r.poll() == KVPoll.Failed
    assert KEY not in manager.connection_pool
    assert r._connection_pool_entries == {}


def test_buggy_failed_send_keeps_the_stale_generation():
    _net, prefill, manager, _ = world(reference.buggy)
    r = receiver(reference.buggy, manager, 1)
    stale = manager.connection_pool[KEY]
    prefill.restart()
    r.send_metadata([0, 1])
    assert r.poll() == KVPoll.Failed
    assert manager.connection_pool[KEY] is stale, "pre-fix: the dead ports stay cached"


def test_invalidate_removes_the_matching_generation_directly():
    """Upstream's shape: a receiver built without __init__, a namespace for the manager."""
    stale = [{"rank_ip": "10.0.0.1", "rank_port": 1001}]
    r = object.__new__(reference.fixed.KVReceiver)
    r.kv_mgr = SimpleNamespace(connection_pool={"key": stale}, connection_lock=threading.Lock())
    r._connection_pool_entries = {"key": stale}
    r.invalidate_cached_bootstrap_infos()
    assert r.kv_mgr.connection_pool == {} and r._connection_pool_entries == {}


# -- 2. a concurrent replacement survives --
def _replacement_race(variant):
    """r1 and r2 share generation 1; the prefill restarts; r1 fails and r3 installs
    generation 2; then r2 (still holding generation 1) fails too. Returns what r4 sees."""
    net, prefill, manager, _ = world(variant)
    r1, r2 = receiver(variant, manager, 1), receiver(variant, manager, 2)
    prefill.restart()
    r1.send_metadata([0])
    r3 = receiver(variant, manager, 3)
    second = manager.connection_pool.get(KEY)
    r2.send_metadata([0])
    fetches = net.route_fetches
    _r4, status = request(variant, manager, 4)
    return {
        "r3_ports": [i["rank_port"] for i in r3.bootstrap_infos],
        "survived": manager.connection_pool.get(KEY) is second,
        "r4_fetches": net.route_fetches - fetches,
        "r4_status": status,
        "new_ports": prefill.rank_ports,
    }


def test_fixed_keeps_a_concurrent_replacement():
    seen = _replacement_race(reference.fixed)
    assert seen["r3_ports"] == seen["new_ports"]
    assert seen["survived"] and seen["r4_fetches"] == 0 and seen["r4_status"] == KVPoll.Success


def test_by_key_invalidation_drops_the_replacement():
    seen = _replacement_race(BY_KEY)
    assert not seen["survived"] and seen["r4_fetches"] == 1, "equality-based invalidation costs a re-fetch"


def test_buggy_never_installs_a_replacement():
    seen = _replacement_race(reference.buggy)
    assert seen["r3_ports"] != seen["new_ports"] and seen["r4_status"] == KVPoll.Failed


def test_invalidate_preserves_a_replacement_directly():
    stale, replacement = [{"rank_port": 1001}], [{"rank_port": 2001}]
    r = object.__new__(reference.fixed.KVReceiver)
    r.kv_mgr = SimpleNamespace(connection_pool={"key": replacement}, connection_lock=threading.Lock())
    r._connection_pool_entries = {"key": stale}
    r.invalidate_cached_bootstrap_infos()
    assert r.kv_mgr.connection_pool == {"key": replacement}


# -- 3. every CP entry goes --
@pytest.mark.parametrize(("variant", "left"), [(reference.fixed, 0), (reference.buggy, 2)])
def test_failed_send_drops_every_cp_entry(variant, left):
    _net, prefill, manager, _ = world(variant, cp_size=2)
    r = receiver(variant, manager, 1)
    assert sorted(manager.connection_pool) == [f"{ADDR}_0_0_0", f"{ADDR}_0_1_0"]
    assert len(r.bootstrap_infos) == 2
    prefill.restart()
    r.send_metadata([0])
    assert r.poll() == KVPoll.Failed
    assert len(manager.connection_pool) == left


# -- 4. the next receiver fetches /route again --
@pytest.mark.parametrize(
    ("variant", "fetches", "want"),
    [(reference.fixed, 1, KVPoll.Success), (reference.buggy, 0, KVPoll.Failed)],
)
def test_next_receiver_refetches_after_a_failure(variant, fetches, want):
    net, prefill, manager, _ = world(variant)
    request(variant, manager, 1)
    prefill.restart()
    assert request(variant, manager, 2)[1] == KVPoll.Failed
    before = net.route_fetches
    r3, status = request(variant, manager, 3)
    assert net.route_fetches - before == fetches
    assert status == want
    used = [i["rank_port"] for i in r3.bootstrap_infos]
    assert (used == prefill.rank_ports) == (want == KVPoll.Success)


# -- 5. the waiting timeout invalidates --
@pytest.mark.parametrize(("variant", "cached"), [(reference.fixed, False), (reference.buggy, True)])
def test_waiting_timeout_invalidates(variant, cached):
    net, prefill, manager, clock = world(variant)
    net.drop(tag=wire.METADATA)  # the metadata vanishes: nobody will ever answer
    r, status = request(variant, manager, 1)
    assert status == KVPoll.WaitingForInput
    clock.advance(manager.config.waiting_timeout - 1)
    assert r.poll() == KVPoll.WaitingForInput
    clock.advance(1)
    assert r.poll() == KVPoll.Failed
    assert "timed out after 300.0 s" in manager.failure_records[1]
    assert 1 in prefill.ranks[0].aborted, "ABORT is sent once, in both forms"
    assert (KEY in manager.connection_pool) == cached


# -- the other triggers --
@pytest.mark.parametrize(("variant", "left"), [(reference.fixed, []), (reference.buggy, [f"{ADDR}_0_0_0"])])
def test_fetch_failure_invalidates_what_the_receiver_used(variant, left):
    """cp 0 is a cache hit, cp 1 a miss whose fetch fails: fixed also drops cp 0's entry."""
    _net, prefill, manager, _ = world(variant, cp_size=2)
    receiver(variant, manager, 1)
    del manager.connection_pool[f"{ADDR}_0_1_0"]
    prefill.kill()
    r = receiver(variant, manager, 2)
    assert r.poll() == KVPoll.Failed and r.bootstrap_infos is None
    assert manager.failure_records[2] == f"Failed to fetch bootstrap info from {ADDR}"
    assert sorted(manager.connection_pool) == left


@pytest.mark.parametrize(("variant", "left"), [(reference.fixed, []), (reference.buggy, [f"{ADDR}_0_0_0"])])
def test_registration_failure_invalidates_what_the_receiver_used(variant, left):
    net, prefill, manager, _ = world(variant, cp_size=2)
    receiver(variant, manager, 1)
    del manager.connection_pool[f"{ADDR}_0_1_0"]
    prefill.restart()
    net.unbind(prefill.endpoints[1])  # /route names cp 1's new port, but nobody listens there
    r = receiver(variant, manager, 2)
    assert r.poll() == KVPoll.Failed
    assert manager.failure_records[2].startswith("Failed to register KV args with prefill 10.0.0.1:")
    assert sorted(manager.connection_pool) == left


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_a_failing_connect_escapes_only_the_buggy_send(variant, monkeypatch):
    net, _prefill, manager, _ = world(variant)
    r = receiver(variant, manager, 1)

    def refuse(endpoint):
        raise TransportError(f"connect to {endpoint}: no route")

    monkeypatch.setattr(net, "connect", refuse)
    if variant is reference.buggy:
        with pytest.raises(TransportError, match="no route"):
            r.send_metadata([0])  # pre-fix: the error reaches the scheduler
    else:
        r.send_metadata([0])
        assert r.poll() == KVPoll.Failed and KEY not in manager.connection_pool


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed], ids=["buggy", "fixed"])
def test_a_failed_fetch_leaves_the_room_failed_not_waiting(variant):
    """As upstream's `init` (0.5.17 and later): it returns before writing WaitingForInput
    when setting up the bootstrap info failed; the write would lift Failed(0) by `max()`."""
    _net, prefill, manager, _ = world(variant)
    prefill.kill()
    r = receiver(variant, manager, 1)
    assert r.poll() == KVPoll.Failed and manager.request_status[1] == KVPoll.Failed
