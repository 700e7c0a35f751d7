"""Lesson `live-set-race`: the hooked scenario, the stress mode, and the manager's parts."""

import pytest

import reference.buggy
import reference.fixed
from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.hooks import Hooks
from reference.lessons import LESSONS, Options, run_lesson
from reference.status import KVPoll
from reference.transport.mock import MockNetwork
from reference.variants import shipped

pytestmark = pytest.mark.lesson(id="live-set-race")
ADDR = "10.0.0.9:8998"


def test_buggy_heartbeat_dies_mid_iteration():
    result = run_lesson(LESSONS["live-set-race"], shipped("buggy"), Options())
    assert result.verdict == "bug"
    assert "RuntimeError: Set changed size during iteration" in result.symptom
    assert "failed 1 of 3 affected rooms" in result.symptom
    assert "2nd prefill failure undetected" in result.symptom
    assert result.details == {"first_failed": 1, "heartbeat_alive": False, "later_failed": 0}


def test_fixed_fails_every_room_and_keeps_watching():
    result = run_lesson(LESSONS["live-set-race"], shipped("fixed"), Options())
    assert result.verdict == "ok"
    assert result.details == {"first_failed": 3, "heartbeat_alive": True, "later_failed": 2}


def test_stress_rate_is_reported_with_seed_and_never_decides():
    buggy = run_lesson(LESSONS["live-set-race"], shipped("buggy"), Options(seed=3, repeat=60))
    fixed = run_lesson(LESSONS["live-set-race"], shipped("fixed"), Options(seed=3, repeat=60))
    assert "seed 3" in buggy.symptom and buggy.details["stress"]["trials"] == 60
    assert fixed.details["stress"]["fired"] == 0
    assert (buggy.verdict, fixed.verdict) == ("bug", "ok")


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_heartbeat_fails_rooms_after_max_failures(variant):
    """Without the concurrent discard both forms detect a dead prefill on time."""
    net, clock = MockNetwork(), VirtualClock()
    manager = variant.KVManager(net, ManagerConfig(heartbeat_interval=2.0, heartbeat_max_failures=3), clock)
    net.add_prefill(ADDR)
    manager.add_prefill(ADDR)
    manager.track_room(ADDR, 1)
    manager.start_heartbeat()
    try:
        clock.wait_for_sleepers(1)
        net.kill(ADDR)
        clock.advance(4.0)
        assert manager.check_status(1) == KVPoll.Bootstrapping, "two misses are not yet a failure"
        clock.advance(2.0)
        assert manager.check_status(1) == KVPoll.Failed
        assert ADDR not in manager.prefill_info_table and ADDR not in manager.addr_to_rooms_tracker
        assert manager.failure_records[1].startswith("Lost connection with prefill instance")
    finally:
        manager.close()


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_node_failure_spares_successful_rooms_and_drops_pool_entries(variant):
    net = MockNetwork()
    manager = variant.KVManager(net, hooks=Hooks())
    manager.add_prefill(ADDR)
    manager.connection_pool[f"{ADDR}_0_0_0"] = [{"rank_ip": "127.0.0.1", "rank_port": 5001}]
    manager.connection_pool["other:1_0_0_0"] = [{"rank_ip": "127.0.0.1", "rank_port": 6001}]
    for room in (1, 2):
        manager.track_room(ADDR, room)
    manager.update_status(2, KVPoll.Success)
    manager._handle_node_failure(ADDR)
    assert manager.request_status == {1: KVPoll.Failed, 2: KVPoll.Success}
    assert list(manager.connection_pool) == ["other:1_0_0_0"]
    assert net.disconnected == ["tcp://127.0.0.1:5001"]


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed])
def test_heartbeat_success_prunes_cleared_rooms(variant):
    net, clock = MockNetwork(), VirtualClock()
    manager = variant.KVManager(net, clock=clock)
    net.add_prefill(ADDR)
    manager.add_prefill(ADDR)
    for room in (1, 2):
        manager.track_room(ADDR, room)
    manager.clear(1)
    manager.start_heartbeat()
    try:
        clock.wait_for_sleepers(1)
        clock.advance(manager.config.heartbeat_interval)
        assert manager.addr_to_rooms_tracker[ADDR] == {2}
        assert manager.heartbeat_rounds == 1
    finally:
        manager.close()
