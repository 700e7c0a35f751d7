"""The bootstrap server's state and route logic (upstream `CommonKVBootstrapServer`).

The bootstrap server runs inside the prefill. Each prefill rank registers where its
PULL socket listens (`PUT /route`); a decode receiver asks for one rank's address
(`GET /route?prefill_dp_rank=..&prefill_cp_rank=..&target_tp_rank=..&target_pp_rank=..`),
or, with every rank -1, for the prefill's parallel layout. This object is that logic
with no transport at all: `handle(method, path, query, body)` returns a `Reply`. The
aiohttp server (`bootstrap_server.py`) only parses and encodes around it, and the mock
transport calls the very same `handle`, so both transports answer identically.

As upstream: topology fields are first-writer-wins; every accepted PUT counts toward
readiness and nothing ever un-counts (a rank that re-registers counts twice); the
server is ready when the count reaches dp x cp x tp x pp, and answers 503 until then.
Unlike upstream, bad input is a 400 naming the field (upstream: a 500), a rank
outside the registered topology is rejected, and so is a topology of more than
`MAX_TOTAL_RANKS` ranks. A rejected request changes nothing.
`room_to_dp_rank` entries carry a timestamp; `expire(ttl)` is the cleanup task's body.
Unlike upstream, the table holds at most `max_rooms` entries: registering one more
evicts the oldest (insertion order; a re-registered room counts as new), so a flood of
registrations costs bounded memory and new rooms keep working.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from reference.common import bootstrap_validate as v
from reference.common.bootstrap_validate import BadRequest
from reference.transport.base import Reply

MAX_ROOMS = 1 << 16  # room_to_dp_rank entries (~330 bytes each); see README "Bounds"
MAX_TOTAL_RANKS = 1 << 16  # dp x cp x tp x pp of one prefill, which bounds prefill_port_table
ROUTES: dict[str, frozenset[str]] = {
    "/route": frozenset({"GET", "PUT"}),
    "/health": frozenset({"GET"}),
    "/register_dp_rank": frozenset({"POST"}),
    "/query_dp_ranks": frozenset({"POST"}),
}
ROUTE_QUERY = ("prefill_dp_rank", "prefill_cp_rank", "target_tp_rank", "target_pp_rank")
TOPOLOGY = ("attn_tp_size", "attn_cp_size", "dp_size", "pp_size", "page_size", "kv_cache_dtype")
DECODE_SIDE = ("target_tp_rank", "target_tp_ranks", "target_cp_ranks", "target_pp_ranks",
               "required_dst_info_num", "required_prefill_response_num")  # fmt: skip
# The keys of the parallel info (`GET /route`, every rank -1): upstream's PrefillServerInfo fields.
PARALLEL_INFO = (*TOPOLOGY, "follow_bootstrap_room", "enable_dsa_cache_layer_split", "prefill_http_port",
                 *DECODE_SIDE)  # fmt: skip


class BootstrapTable:
    def __init__(self, now: Callable[[], float] = time.monotonic, max_rooms: int = MAX_ROOMS) -> None:
        if max_rooms < 1:
            raise ValueError(f"max_rooms must be at least 1, got {max_rooms}")
        self.now, self.max_rooms = now, max_rooms
        self._lock = threading.Lock()  # upstream: one asyncio.Lock on the server's loop
        self.topology: dict[str, Any] | None = None
        self.prefill_port_table: dict[tuple[int, int, int, int], dict[str, Any]] = {}
        self.registered_count = 0
        self.room_to_dp_rank: OrderedDict[int, dict[str, float]] = OrderedDict()
        self.rooms_evicted = 0

    def handle(self, method: str, path: str, query: Mapping[str, str], body: bytes) -> Reply:
        allowed = ROUTES.get(path)
        if allowed is None:
            return Reply(404, f"no route {path}")
        if method not in allowed:
            return Reply(405, f"{method} not allowed on {path} (allowed: {', '.join(sorted(allowed))})")
        try:
            return self._dispatch(method, path, query, body)
        except BadRequest as exc:
            return Reply(400, str(exc))

    def _dispatch(self, method: str, path: str, query: Mapping[str, str], body: bytes) -> Reply:
        if path == "/health":
            return Reply(200, "OK")
        if path == "/route":
            return self.register(v.json_object(body)) if method == "PUT" else self.query(query)
        if path == "/register_dp_rank":
            return self.register_dp_rank(v.json_object(body))
        return self.query_dp_ranks(v.json_object(body))

    # -- PUT /route ------------------------------------------------------------------
    def register(self, payload: Mapping[str, Any]) -> Reply:
        topology, slot, address = _parse_registration(payload)
        with self._lock:
            stored = self.topology or topology  # first writer wins, as upstream
            _check_inside(stored, slot)
            self.topology = stored
            self.prefill_port_table[slot] = address
            self.registered_count += 1
        return Reply(200, "OK")

    @property
    def expected_count(self) -> int:
        t = self.topology
        return 0 if t is None else t["dp_size"] * t["attn_cp_size"] * t["attn_tp_size"] * t["pp_size"]

    @property
    def ready(self) -> bool:
        return self.topology is not None and self.registered_count >= self.expected_count

    # -- GET /route ------------------------------------------------------------------
    def query(self, query: Mapping[str, str]) -> Reply:
        q = v.query_ints(query, ROUTE_QUERY)
        with self._lock:
            if not self.ready:
                return Reply(
                    503, f"prefill not ready: {self.registered_count} of {self.expected_count} ranks"
                )
            assert self.topology is not None
            if all(value == -1 for value in q.values()):
                return Reply(200, self._parallel_info())
            slot = tuple(q[name] for name in ROUTE_QUERY)
            address = self.prefill_port_table.get(slot)  # type: ignore[arg-type]
        if address is None:
            return Reply(404, "no rank registered at dp={}, cp={}, tp={}, pp={}".format(*slot))
        return Reply(200, dict(address))

    def _parallel_info(self) -> dict[str, Any]:
        """Upstream's `PrefillServerInfo` as JSON: the layout, then its decode-side fields
        (`target_*`, `required_*`) all null; upstream's decode builds the dataclass from
        exactly these keys, so an extra or a missing one makes it fail."""
        t = self.topology
        assert t is not None
        balance = t["load_balance_method"] or "follow_bootstrap_room"  # upstream's default when absent
        return {
            **{key: t[key] for key in TOPOLOGY},
            "follow_bootstrap_room": balance == "follow_bootstrap_room",
            "enable_dsa_cache_layer_split": bool(t["enable_dsa_cache_layer_split"]),
            "prefill_http_port": t["prefill_http_port"],
            **dict.fromkeys(DECODE_SIDE),
        }

    # -- room to dp rank -------------------------------------------------------------
    def register_dp_rank(self, payload: Mapping[str, Any]) -> Reply:
        room = v.integer(payload, "bootstrap_room", 0, v.MAX_ROOM)
        dp_rank = v.integer(payload, "dp_rank", 0, v.MAX_RANK)
        with self._lock:
            rooms = self.room_to_dp_rank
            rooms.pop(room, None)  # a re-registration moves the room to the young end
            rooms[room] = {"dp_rank": dp_rank, "timestamp": self.now()}
            while len(rooms) > self.max_rooms:
                rooms.popitem(last=False)
                self.rooms_evicted += 1
        return Reply(200, "OK")

    def query_dp_ranks(self, payload: Mapping[str, Any]) -> Reply:
        rooms = v.room_list(payload, "bootstrap_rooms")
        with self._lock:
            known = {
                str(room): int(self.room_to_dp_rank[room]["dp_rank"])
                for room in rooms
                if room in self.room_to_dp_rank
            }
        return Reply(200, known)

    def expire(self, ttl: float) -> int:
        """Drop `room_to_dp_rank` entries older than `ttl`; return how many."""
        cutoff = self.now() - ttl
        with self._lock:
            old = [room for room, entry in self.room_to_dp_rank.items() if entry["timestamp"] < cutoff]
            for room in old:
                del self.room_to_dp_rank[room]
        return len(old)


def _parse_registration(p: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[int, int, int, int], dict]:
    """Validate a `PUT /route` body: (topology, table slot, {rank_ip, rank_port})."""
    tp_size, tp = v.rank_below(p, "attn_tp_rank", "attn_tp_size")
    cp_size, cp = v.rank_below(p, "attn_cp_rank", "attn_cp_size")
    dp_size, dp = v.rank_below(p, "attn_dp_rank", "attn_dp_size")
    pp_size, pp = v.rank_below(p, "pp_rank", "pp_size")
    system_dp_size, system_dp = v.rank_below(p, "system_dp_rank", "system_dp_size")
    address = {"rank_ip": v.ip_address(p, "rank_ip"), "rank_port": v.integer(p, "rank_port", 1, v.MAX_PORT)}
    dp_total = dp_size if system_dp_size == 1 else system_dp_size
    topology = {
        "attn_tp_size": tp_size,
        "attn_cp_size": cp_size,
        "dp_size": dp_total,
        "pp_size": pp_size,
        "page_size": v.integer(p, "page_size", 1, 1 << 20),
        "kv_cache_dtype": v.text(p, "kv_cache_dtype", 32),
        "load_balance_method": v.optional_text(p, "load_balance_method"),
        "enable_dsa_cache_layer_split": v.optional_bool(p, "enable_dsa_cache_layer_split"),
        "prefill_http_port": v.optional_integer(p, "prefill_http_port", 1, v.MAX_PORT),
    }
    total = tp_size * cp_size * dp_total * pp_size
    if total > MAX_TOTAL_RANKS:
        raise BadRequest(f"topology of {total} ranks over the {MAX_TOTAL_RANKS}-rank limit")
    dp_group = dp if system_dp_size == 1 else system_dp  # as upstream
    return topology, (dp_group, cp, tp, pp), address


def _check_inside(topology: Mapping[str, Any], slot: tuple[int, int, int, int]) -> None:
    limits = ("dp_size", "attn_cp_size", "attn_tp_size", "pp_size")
    for value, (name, limit) in zip(slot, ((n, topology[n]) for n in limits), strict=True):
        if value >= limit:
            raise BadRequest(f"rank {value} outside the registered {name} {limit}")
