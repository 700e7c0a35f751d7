"""An in-process prefill instance on the mock network.

`MockPrefill` starts a `BootstrapTable` (the bootstrap server's state) behind
`bootstrap_addr` and `tp_size x cp_size` ranks, each bound on a fresh mock port and
registered through the table's own `PUT /route` logic, as a real rank registers over
HTTP. The data plane is memcpy into the decode's registered memory. `restart()` is a
quick restart behind the same address: the old ranks and table vanish and new ones
come up on new ports (`same_ports=True`: on the old ones) in the same instant, so
`/health` never fails in between, which is exactly the trigger of lesson `stale-bootstrap`.
`kill()` stops everything.
"""

from __future__ import annotations

import json

from reference.common.bootstrap_table import BootstrapTable
from reference.dataplane import MemcpyWriter
from reference.prefill.rank import PrefillRank
from reference.transport.mock import MockNetwork


def registration_body(rank_ip: str, rank_port: int, tp: int, tp_size: int, cp: int, cp_size: int) -> dict:
    """A rank's `PUT /route` body (dp 1, pp 1, page size 1, dtype auto).

    A prefill with CP > 1 says its KV cache is split over the CP ranks
    (`enable_dsa_cache_layer_split`), so upstream's decode pulls from every CP rank, as
    the reference receiver always does (upstream pulls only CP rank 0 otherwise).
    """
    return {
        "enable_dsa_cache_layer_split": cp_size > 1,
        "attn_tp_size": tp_size, "attn_tp_rank": tp, "attn_cp_size": cp_size, "attn_cp_rank": cp,
        "attn_dp_size": 1, "attn_dp_rank": 0, "pp_size": 1, "pp_rank": 0,
        "system_dp_size": 1, "system_dp_rank": 0, "rank_ip": rank_ip, "rank_port": rank_port,
        "page_size": 1, "kv_cache_dtype": "auto",
    }  # fmt: skip


class MockPrefill:
    def __init__(
        self,
        net: MockNetwork,
        bootstrap_addr: str = "10.0.0.1:8998",
        tp_size: int = 2,
        cp_size: int = 1,
    ) -> None:
        self.net, self.bootstrap_addr = net, bootstrap_addr
        self.tp_size, self.cp_size = tp_size, cp_size
        self.rank_ip = bootstrap_addr.rsplit(":", 1)[0]
        self.generation = 0
        self.table = BootstrapTable()
        self.ranks: list[PrefillRank] = []
        self.endpoints: list[str] = []
        self.start()

    @property
    def rank_ports(self) -> list[int]:
        return [int(endpoint.rsplit(":", 1)[1]) for endpoint in self.endpoints]

    def start(self, ports: list[int] | None = None) -> None:
        """Come up: a new table and new ranks, on fresh ports or on `ports` (one per rank)."""
        self.generation += 1
        self.table = BootstrapTable(self.net.clock.now) if self.net.clock else BootstrapTable()
        writer = MemcpyWriter(self.net.memory)
        self.ranks, self.endpoints = [], []
        for cp in range(self.cp_size):
            for tp in range(self.tp_size):
                rank = PrefillRank(cp * self.tp_size + tp, writer, self._send_to_decode)
                port = None if ports is None else ports[len(self.ranks)]
                endpoint = self.net.bind(rank.handle, ip=self.rank_ip, port=port)
                body = registration_body(
                    self.rank_ip, int(endpoint.rsplit(":", 1)[1]), tp, self.tp_size, cp, self.cp_size
                )
                reply = self.table.handle("PUT", "/route", {}, json.dumps(body).encode())
                assert reply.status == 200, reply
                self.ranks.append(rank)
                self.endpoints.append(endpoint)
        self.net.serve(self.bootstrap_addr, self.table.handle)
        self.net.add_prefill(self.bootstrap_addr)

    def kill(self) -> None:
        self.net.kill(self.bootstrap_addr)
        self.net.unserve(self.bootstrap_addr)
        for endpoint in self.endpoints:
            self.net.unbind(endpoint)

    def restart(self, same_ports: bool = False) -> None:
        """A quick restart behind the same address, on new ports or on the same ones."""
        ports = self.rank_ports if same_ports else None
        self.kill()
        self.start(ports)

    def close(self) -> None:
        self.kill()

    def _send_to_decode(self, decode_endpoint: str, frames: list[bytes]) -> None:
        self.net.deliver(f"tcp://{decode_endpoint}", frames)
