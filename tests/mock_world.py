"""Helpers for receiver tests: one decode manager facing a `MockPrefill` on a `MockNetwork`."""

from reference.clock import VirtualClock
from reference.config import ManagerConfig
from reference.dataplane import KVMemory
from reference.lessons.stale_bootstrap import teaching as stale
from reference.prefill.mock import MockPrefill
from reference.status import KVPoll
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
KEY = f"{ADDR}_0_0_0"


# The tempting wrong fix (invalidate by key, not by identity), shared with the notebook.
BY_KEY = stale.BY_KEY


def world(variant, tp_size=1, cp_size=1):
    clock = VirtualClock()
    net = MockNetwork(clock)
    prefill = MockPrefill(net, ADDR, tp_size=tp_size, cp_size=cp_size)
    manager = variant.KVManager(net, ManagerConfig(), clock)
    manager.listen(KVMemory(regions=tp_size * cp_size))
    assert manager.try_ensure_parallel_info(ADDR)
    return net, prefill, manager, clock


def receiver(variant, manager, room):
    r = variant.KVReceiver(manager, ADDR, room)
    r.init(0)
    return r


def request(variant, manager, room):
    r = receiver(variant, manager, room)
    if r.poll() != KVPoll.Failed:
        r.send_metadata([0, 1])
    return r, r.poll()
