"""A prefill reduced to what the receivers' cache races need: a route and rank ports.

The explorations of lesson `stale-bootstrap` run receivers on several threads; every
line of code they run multiplies the interleavings, so instead of the mock network and
a `MockPrefill` (whose sends run the rank's whole transfer on the caller's thread) the
receivers talk to this stub: `GET /route` answers the current rank port, a send to a
port of an earlier generation fails as a real send does once its timeout expires, and
`restart()` moves the rank to a new port behind the same bootstrap address.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

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


class StubSocket:
    def __init__(self, prefill: StubPrefill, port: int) -> None:
        self.prefill, self.port = prefill, port
        self.lock = threading.Lock()

    def send(self, frames: Frames) -> None:
        if self.port != self.prefill.port:
            raise TransportError(f"send to tcp://{RANK_IP}:{self.port} timed out (no such rank)")


class StubPrefill:
    """Also the decode's transport (the methods of `reference.transport.base.Transport`)."""

    def __init__(self) -> None:
        self.port = 2001

    def restart(self) -> None:
        self.port += 1000

    def is_dead(self, port: int) -> bool:
        return port != self.port

    def health(self, bootstrap_addr: str) -> bool:
        return True

    def get_route(self, bootstrap_addr: str, params: Mapping[str, int]) -> Reply:
        if params.get("target_tp_rank") == -1:
            return Reply(200, dict(LAYOUT))
        return Reply(200, {"rank_ip": RANK_IP, "rank_port": self.port})

    def register_dp_rank(self, bootstrap_addr: str, room: int, dp_rank: int) -> Reply:
        return Reply(200, "OK")

    def connect(self, endpoint: str) -> StubSocket:
        return StubSocket(self, int(endpoint.rsplit(":", 1)[1]))

    def disconnect(self, endpoint: str) -> None:
        pass

    def bind_inbox(self, handler: Handler) -> str:
        return "10.0.0.2:3001"

    def register_memory(self, session: str, memory: Any) -> None:
        pass
