"""The bootstrap server's input rules, one row each: a 400 with a one-line reason and the
state unchanged; valid input right next to each rule is still accepted as upstream. And
the `room_to_dp_rank` bound: the oldest entries go first."""

import copy
import json

import pytest

from reference.common.bootstrap_table import MAX_ROOMS, BootstrapTable
from reference.prefill.mock import registration_body

ROUTE = ("prefill_dp_rank", "prefill_cp_rank", "target_tp_rank", "target_pp_rank")


def body(**override) -> bytes:
    return json.dumps({**registration_body("127.0.0.1", 5000, 0, 1, 0, 1), **override}).encode()


def state(table: BootstrapTable):
    return copy.deepcopy(
        (
            table.topology,
            table.prefill_port_table,
            table.registered_count,
            list(table.room_to_dp_rank.items()),
        )
    )


@pytest.fixture
def table():
    fresh = BootstrapTable()
    fresh.handle("POST", "/register_dp_rank", {}, b'{"bootstrap_room": 1, "dp_rank": 0}')
    return fresh


def rejected(table: BootstrapTable, method: str, path: str, raw: bytes = b"", query=None) -> str:
    before = state(table)
    reply = table.handle(method, path, query or {}, raw)
    assert reply.status == 400, reply
    assert isinstance(reply.body, str) and "\n" not in reply.body and "\r" not in reply.body
    assert state(table) == before
    return reply.body


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (body(prefill_http_port=-5), "'prefill_http_port' = -5 outside 1..65535"),
        (body(prefill_http_port=0), "'prefill_http_port' = 0 outside 1..65535"),
        (body(prefill_http_port=65536), "outside 1..65535"),
        (body(prefill_http_port=True), "'prefill_http_port' must be an integer"),
        (body(rank_port=0), "'rank_port' = 0 outside 1..65535"),
        (body(rank_ip="10.0.0.1\x00"), "'rank_ip' must be an IP address"),
        (body(rank_ip="10.0.0.1\r\nX: y"), "'rank_ip' must be an IP address"),
        (body(rank_ip="fe80::1%\n"), "'rank_ip' must be an IP address"),
        (body(rank_ip="prefill-0.local"), "'rank_ip' must be an IP address"),
        (body(rank_ip="010.0.0.1"), "'rank_ip' must be an IP address"),
        (body(rank_ip=167772161), "'rank_ip' must be an IP address such as 10.0.0.1, got int"),
        (body(load_balance_method="x" * 60_000), "'load_balance_method' must be a non-empty string of at most 64"),  # noqa: E501
        (body(load_balance_method=""), "'load_balance_method' must be a non-empty string"),
        (body(load_balance_method="round robin"), "printable ASCII characters without spaces"),
        (body(kv_cache_dtype="fp8\u00e9"), "'kv_cache_dtype' must be a non-empty string"),
        (body(kv_cache_dtype="a" * 33), "at most 32"),
        (body(enable_dsa_cache_layer_split=1), "must be true, false or null, got int"),
        (body(attn_tp_size=256, attn_cp_size=512), "131072 ranks over the 65536-rank limit"),
        (body().decode().encode("utf-16"), "not UTF-8"),
        (body().decode().encode("utf-16-le"), "malformed JSON body"),
        (body().decode().encode("utf-32"), "not UTF-8"),
        (b"\xef\xbb\xbf" + body(), "without a byte order mark"),
        (body().replace(b'"page_size": 1', b'"page_size": NaN'), "NaN is not JSON"),
        (body().replace(b'"page_size": 1', b'"page_size": -Infinity'), "-Infinity is not JSON"),
        (b'{"a": ' + b"9" * 5000 + b"}", "malformed JSON body"),
        (b"[" * 30_000 + b"]" * 30_000, "malformed JSON body: nested too deeply"),
    ],
)  # fmt: skip
def test_a_registration_breaking_a_rule_is_400_and_changes_nothing(table, raw, needle):
    assert needle in rejected(table, "PUT", "/route", raw)


def test_the_values_next_to_each_rule_are_accepted_and_echoed_as_upstream():
    table = BootstrapTable()
    raw = body(prefill_http_port=65535, rank_ip="::1", rank_port=65535, load_balance_method="round_robin",
               kv_cache_dtype="fp8_e5m2", enable_dsa_cache_layer_split=None)  # fmt: skip
    assert table.handle("PUT", "/route", {}, raw).status == 200
    info = table.handle("GET", "/route", dict.fromkeys(ROUTE, "-1"), b"").body
    assert (info["prefill_http_port"], info["follow_bootstrap_room"]) == (65535, False)
    assert info["kv_cache_dtype"] == "fp8_e5m2" and info["enable_dsa_cache_layer_split"] is False
    reply = table.handle("GET", "/route", dict.fromkeys(ROUTE, "0"), b"")
    assert reply.body == {"rank_ip": "::1", "rank_port": 65535}


@pytest.mark.parametrize(
    ("value", "needle"),
    [("\u0660", r"got '\u0660' (ASCII digits"), ("\uff11", "ASCII digits"), ("1\u0660", "ASCII digits"),
     ("-5", "-1..65536"), ("65537", "-1..65536"), (" 1", "ASCII digits"), ("+1", "ASCII digits"),
     ("", "must be an integer")],
)  # fmt: skip
def test_query_integers_are_ascii_digits_in_range(table, value, needle):
    query = {**dict.fromkeys(ROUTE, "0"), "target_tp_rank": value}
    assert needle in rejected(table, "GET", "/route", query=query)


def test_the_room_table_evicts_its_oldest_entries_beyond_its_bound():
    table = BootstrapTable(max_rooms=3)
    for room in (1, 2, 3, 1, 4, 5):  # room 1 re-registers: it becomes the youngest
        reply = table.handle(
            "POST", "/register_dp_rank", {}, json.dumps({"bootstrap_room": room, "dp_rank": 0}).encode()
        )
        assert reply.status == 200
    assert list(table.room_to_dp_rank) == [1, 4, 5] and table.rooms_evicted == 2
    query = json.dumps({"bootstrap_rooms": [1, 2, 3, 4, 5]}).encode()
    assert table.handle("POST", "/query_dp_ranks", {}, query).body == {"1": 0, "4": 0, "5": 0}


def test_a_registration_flood_stays_within_the_default_bound():
    table = BootstrapTable()
    for room in range(MAX_ROOMS + 1000):
        table.register_dp_rank({"bootstrap_room": room, "dp_rank": 0})
    assert len(table.room_to_dp_rank) == MAX_ROOMS and next(iter(table.room_to_dp_rank)) == 1000
    with pytest.raises(ValueError, match="max_rooms"):
        BootstrapTable(max_rooms=0)
