"""A decode manager whose `connection_pool` already holds the prefill's ranks.

Shared by the cache-hit and contention benchmarks: on a warm pool a receiver's
`_setup_bootstrap_infos` takes the cache-hit path and does no I/O, so the mock
transport is enough. `receiver_on(..., misses=[])` replaces the route fetch and the
KV-args registration with in-process stand-ins (the same for both forms) and counts
how often a receiver fell into its miss path.
"""

from __future__ import annotations

from types import ModuleType

from reference.hooks import Hooks
from reference.transport.mock import MockNetwork

ADDR = "10.0.0.1:8998"
KEY = f"{ADDR}_0_0_0"


def generation(port: int) -> list[dict]:
    return [
        {"rank_ip": "127.0.0.1", "rank_port": port + tp, "pp_rank": 0, "is_dummy": False, "tp_rank": tp,
         "cp_rank": 0, "region": tp}
        for tp in range(2)
    ]  # fmt: skip


def warm_manager(module: ModuleType):
    manager = module.KVManager(MockNetwork(), hooks=Hooks())
    manager.add_prefill(ADDR)
    manager.connection_pool[KEY] = generation(20000)
    return manager


def receiver_on(module: ModuleType, manager, room: int, misses: list[int] | None = None):
    receiver = module.KVReceiver(manager, ADDR, room)
    receiver.target_tp_ranks = [0, 1]  # as init() maps a 2-rank prefill onto 1 decode rank
    if misses is not None:  # the miss path without I/O: same stand-ins for both forms
        receiver._fetch_bootstrap_infos = lambda _cp: misses.append(1) or generation(30000)
        receiver._register_kv_args = lambda: True
    return receiver
