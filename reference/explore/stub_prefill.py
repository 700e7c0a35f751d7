"""A prefill reduced to what the receivers' cache races need: a route and rank ports.

The explorations of lesson `stale-bootstrap` run receivers on several threads; every
line of code they run multiplies the interleavings, so instead of the mock network and
a `MockPrefill` (whose sends run the rank's whole transfer on the caller's thread) the
receivers talk to this stub: `GET /route` answers the current rank port, a send to a
port of an earlier generation fails as a real send does once its timeout expires, and
`restart()` moves the rank to a new port behind the same bootstrap address.

With `cp=2` the prefill has two CP ranks (CP rank r listens on the generation's port
plus `CP_STRIDE * r`), and one of them can fail alone: `route_fails` (its `GET /route`
answers 503, no rank registered) or `refuses` (its route answers, but every send to
its port fails). The stub records which ports were sent metadata (`metadata_to`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from reference import wire
from reference.common.bootstrap_table import DECODE_SIDE
from reference.transport.base import Frames, Handler, Reply, TransportError

RANK_IP = "10.0.0.1"
ADDR = f"{RANK_IP}:8998"
KEY = f"{ADDR}_0_0_0"  # upstream's pool key for dp 0, cp 0, tp 0
# The parallel info as a bootstrap server answers it (`BootstrapTable._parallel_info`):
# upstream's decode builds its `PrefillServerInfo` from exactly these keys.
LAYOUT = {"attn_tp_size": 1, "attn_cp_size": 1, "dp_size": 1, "pp_size": 1, "page_size": 1,
          "kv_cache_dtype": "auto", "follow_bootstrap_room": True, "enable_dsa_cache_layer_split": False,
          "prefill_http_port": None, **dict.fromkeys(DECODE_SIDE)}  # fmt: skip
CP_STRIDE = 100  # port offset of CP rank r: r * CP_STRIDE


class StubSocket:
    def __init__(self, prefill: StubPrefill, ip: str, port: int) -> None:
        self.prefill, self.ip, self.port = prefill, ip, port
        self.lock = threading.Lock()

    def send(self, frames: Frames) -> None:
        if self.prefill.is_dead(self.port) or self.prefill.refused(self.port):
            raise TransportError(f"send to tcp://{self.ip}:{self.port} timed out (no such rank)")
        if frames and frames[0] == wire.METADATA:
            self.prefill.metadata_to.append(self.port)


class StubPrefill:
    """Also the decode's transport (the methods of `reference.transport.base.Transport`)."""

    def __init__(self, cp: int = 1, route_fails: int | None = None, refuses: int | None = None) -> None:
        self.port = 2001  # CP rank 0's port; CP rank r listens on port + r * CP_STRIDE
        self.cp, self.route_fails, self.refuses = cp, route_fails, refuses
        self.metadata_to: list[int] = []  # ports a metadata message reached

    def restart(self) -> None:
        self.port += 1000

    def cp_port(self, cp_rank: int) -> int:
        return self.port + cp_rank * CP_STRIDE

    def is_dead(self, port: int) -> bool:
        return port not in {self.cp_port(r) for r in range(self.cp)}

    def refused(self, port: int) -> bool:
        return self.refuses is not None and port == self.cp_port(self.refuses)

    def health(self, bootstrap_addr: str) -> bool:
        return True

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        if params.get("target_tp_rank") == -1:
            # with CP > 1, upstream's decode pulls from every CP rank only when the prefill
            # splits its cache layers across them (else from CP rank 0 alone); ours always does
            split = self.cp > 1
            return Reply(200, {**LAYOUT, "attn_cp_size": self.cp, "enable_dsa_cache_layer_split": split})
        cp_rank = params.get("prefill_cp_rank", 0)
        if cp_rank == self.route_fails:
            return Reply(503, "no prefill rank registered")
        rank_ip = bootstrap_addr.rsplit(":", 1)[0]  # a prefill's ranks on its bootstrap host
        return Reply(200, {"rank_ip": rank_ip, "rank_port": self.cp_port(cp_rank)})

    def register_dp_rank(self, bootstrap_addr: str, room: int, dp_rank: int) -> Reply:
        return Reply(200, "OK")

    def connect(self, endpoint: str) -> StubSocket:
        host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
        return StubSocket(self, host, int(port))

    def disconnect(self, endpoint: str) -> None:
        pass

    def bind_inbox(self, handler: Handler) -> str:
        return "10.0.0.2:3001"

    def register_memory(self, session: str, memory: Any) -> None:
        pass
