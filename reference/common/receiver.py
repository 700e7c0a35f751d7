"""The decode-side KV receiver (upstream `CommonKVReceiver` plus mooncake's send path).

One receiver serves one request (`bootstrap_room`) whose KV comes from the prefill
behind `bootstrap_addr`. Its life: the constructor tracks the room (Bootstrapping);
`init()` finds which prefill ranks hold the KV and gets their PULL addresses, from the
manager's `connection_pool` cache or from `GET /route`, registering this decode's KV
memory with each newly fetched rank (WaitingForInput); `send_metadata()` tells each
rank where to write; the decode inbox turns the room Success when every rank reported;
`poll()` latches the end state and fires the waiting timeout.

The pool key is upstream's `"{addr}_{prefill_dp_rank}_{cp_rank}_{target_tp_rank}"`; its
value is the list of `{rank_ip, rank_port, pp_rank, is_dummy}` dicts for that key (we add
`tp_rank`, `cp_rank` and the decode memory `region` the rank writes into). Lesson
`stale-bootstrap` (PR #36029) lives in the methods a variant provides: `__init__`,
`_setup_bootstrap_infos`, `invalidate_cached_bootstrap_infos`, `_register_kv_args`,
`send_metadata`, `_check_waiting_timeout`. The helpers they share are here.
"""

from __future__ import annotations

from typing import Any

from reference import wire
from reference.status import KVPoll
from reference.transport.base import PushSocket, TransportError


class KVTransferError(RuntimeError):
    def __init__(self, bootstrap_room: int, reason: str) -> None:
        super().__init__(f"room {bootstrap_room}: {reason}")
        self.bootstrap_room = bootstrap_room


class ReceiverBase:
    def __init__(self, mgr: Any, bootstrap_addr: str, bootstrap_room: int) -> None:
        self.kv_mgr = mgr
        self.bootstrap_addr = bootstrap_addr
        self.bootstrap_room = bootstrap_room
        self.conclude_state: KVPoll | None = None
        self.init_time: float | None = None
        self.abort_notified = False
        self.bootstrap_infos: list[dict] | None = None
        self.prefill_dp_rank = 0
        self.target_cp_ranks: list[int] = [0]
        self.target_tp_ranks: list[int] = [0]
        self.target_tp_rank = 0
        self.target_pp_ranks: list[int] = [0]
        self.required_dst_info_num = 1
        mgr.track_room(bootstrap_addr, bootstrap_room)

    # -- init ------------------------------------------------------------------------
    def init(self, prefill_dp_rank: int = 0) -> None:
        with self.kv_mgr.connection_lock:
            info = self.kv_mgr.prefill_info_table.get(self.bootstrap_addr)
        if info is None:
            self._fail(f"Could not fetch prefill parallel info from bootstrap_addr: {self.bootstrap_addr}")
            return
        self.prefill_dp_rank = prefill_dp_rank
        self._map_ranks(info.attn_tp_size, info.attn_cp_size, info.pp_size)
        responders = len(self.target_cp_ranks) * len(self.target_tp_ranks) * len(self.target_pp_ranks)
        self.kv_mgr.required_prefill_response_num_table[self.bootstrap_room] = responders
        self._setup_bootstrap_infos()
        if self.conclude_state == KVPoll.Failed:  # as upstream: WaitingForInput would lift Failed (max)
            return
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.WaitingForInput)

    def _map_ranks(self, prefill_tp: int, prefill_cp: int, prefill_pp: int) -> None:
        """Which prefill ranks hold this decode rank's KV (non-MLA, decode cp = 1)."""
        decode_tp, rank = self.kv_mgr.config.attn_tp_size, self.kv_mgr.config.attn_tp_rank
        if prefill_tp >= decode_tp:  # equal (1:1) or fan-in from a range of prefill ranks
            ratio = prefill_tp // decode_tp
            self.target_tp_ranks = list(range(rank * ratio, (rank + 1) * ratio))
        else:  # several decode ranks read one prefill rank
            self.required_dst_info_num = decode_tp // prefill_tp
            self.target_tp_ranks = [rank // self.required_dst_info_num]
        self.target_tp_rank = self.target_tp_ranks[0]
        self.target_cp_ranks = list(range(prefill_cp))
        self.target_pp_ranks = list(range(prefill_pp))

    def _setup_bootstrap_infos(self) -> None:
        raise NotImplementedError("a variant provides _setup_bootstrap_infos")

    def _bootstrap_key(self, cp_rank: int) -> str:
        return f"{self.bootstrap_addr}_{self.prefill_dp_rank}_{cp_rank}_{self.target_tp_rank}"

    def _fetch_bootstrap_infos(self, cp_rank: int) -> list[dict] | None:
        """`GET /route` for every target rank of one CP rank; None if any fetch fails."""
        infos: list[dict] = []
        per_cp = len(self.target_tp_ranks) * len(self.target_pp_ranks)
        for tp_rank in self.target_tp_ranks:
            for pp_rank in reversed(self.target_pp_ranks):
                info = self._get_bootstrap_info_from_server(self.prefill_dp_rank, cp_rank, tp_rank, pp_rank)
                if info is None:
                    return None
                region = self.target_cp_ranks.index(cp_rank) * per_cp + len(infos)
                infos.append({**info, "pp_rank": pp_rank, "is_dummy": False, "tp_rank": tp_rank,
                              "cp_rank": cp_rank, "region": region})  # fmt: skip
        return infos

    def _get_bootstrap_info_from_server(self, dp: int, cp: int, tp: int, pp: int) -> dict | None:
        params = {"prefill_dp_rank": dp, "prefill_cp_rank": cp, "target_tp_rank": tp, "target_pp_rank": pp}
        try:
            reply = self.kv_mgr.transport.get_route(self.bootstrap_addr, params)
        except TransportError:
            return None
        body = reply.body
        if reply.status != 200 or not isinstance(body, dict) or not {"rank_ip", "rank_port"} <= set(body):
            return None
        return {"rank_ip": body["rank_ip"], "rank_port": body["rank_port"]}

    def _fail_fetch(self) -> None:
        self.kv_mgr.record_failure(
            self.bootstrap_room, f"Failed to fetch bootstrap info from {self.bootstrap_addr}"
        )
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.conclude_state = KVPoll.Failed
        self.bootstrap_infos = None

    # -- messages to prefill ranks -------------------------------------------------------
    def _connect_to_bootstrap_server(self, info: dict) -> PushSocket:
        return self.kv_mgr.transport.connect(f"tcp://{info['rank_ip']}:{info['rank_port']}")

    def _registration_frames(self, info: dict) -> list[bytes]:
        inbox = self.kv_mgr.inbox
        ptr = inbox.memory.region_ptr(info["region"])
        memory = inbox.memory
        return wire.Registration(inbox.session, inbox.endpoint, ptr, memory.item_len, memory.plane).frames()

    def _metadata_frames(self, kv_indices: list[int]) -> list[bytes]:
        inbox = self.kv_mgr.inbox
        room, indices = self.bootstrap_room, tuple(kv_indices)
        return wire.Metadata(
            room, inbox.session, inbox.endpoint, indices, self.required_dst_info_num
        ).frames()

    def _fail_register(self, info: dict, exc: Exception) -> None:
        self._fail(f"Failed to register KV args with prefill {info['rank_ip']}:{info['rank_port']}: {exc}")
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)

    def _fail_send(self, info: dict, exc: Exception) -> None:
        self._fail(f"send_metadata to prefill {info['rank_ip']}:{info['rank_port']} failed: {exc}")

    def _fail(self, reason: str) -> None:
        self.kv_mgr.record_failure(self.bootstrap_room, reason)
        self.conclude_state = KVPoll.Failed

    # -- poll and the waiting timeout ------------------------------------------------------
    def poll(self) -> KVPoll:
        if self.conclude_state is not None:
            return self.conclude_state
        status = self.kv_mgr.check_status(self.bootstrap_room)
        if status in (KVPoll.Success, KVPoll.Failed):
            self.conclude_state = status
            return status
        if status == KVPoll.WaitingForInput and self.init_time is not None:
            return self._check_waiting_timeout()
        return status

    def _check_waiting_timeout(self) -> KVPoll:
        raise NotImplementedError("a variant provides _check_waiting_timeout")

    def _waiting_timed_out(self) -> bool:
        assert self.init_time is not None
        return self.kv_mgr.clock.now() - self.init_time >= self.kv_mgr.config.waiting_timeout

    def _record_timeout(self) -> None:
        timeout = self.kv_mgr.config.waiting_timeout
        self.kv_mgr.record_failure(
            self.bootstrap_room, f"Request timed out after {timeout} s in KVPoll.WaitingForInput"
        )

    def _send_abort_once(self) -> None:
        """Tell each prefill rank to drop the room, best effort (a dead rank is ignored)."""
        if self.abort_notified:
            return
        self.abort_notified = True
        frames = wire.Abort(self.bootstrap_room, self.kv_mgr.inbox.session).frames()
        for info in self.bootstrap_infos or []:
            try:
                sock = self._connect_to_bootstrap_server(info)
                with sock.lock:
                    sock.send(frames)
            except TransportError:
                pass

    # -- the end of a request ----------------------------------------------------------------
    def abort(self) -> None:
        """The scheduler's AbortReq for this request (upstream 0.5.12+): record, write Failed, latch."""
        self.kv_mgr.record_failure(self.bootstrap_room, "Aborted by AbortReq.")
        self.kv_mgr.update_status(self.bootstrap_room, KVPoll.Failed)
        self.conclude_state = KVPoll.Failed

    def clear(self) -> None:
        self.kv_mgr.clear(self.bootstrap_room)
        self.kv_mgr.required_prefill_response_num_table.pop(self.bootstrap_room, None)
        self.kv_mgr.prefill_response_tracker.pop(self.bootstrap_room, None)

    def failure_exception(self) -> KVTransferError:
        self.conclude_state = KVPoll.Failed
        self.clear()
        with self.kv_mgr.failure_lock:
            reason = self.kv_mgr.failure_records.pop(self.bootstrap_room, "Failed due to an unknown reason")
        return KVTransferError(self.bootstrap_room, reason)
