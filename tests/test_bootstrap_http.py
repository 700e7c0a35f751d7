"""The bootstrap server's HTTP API, through aiohttp's test client.

Every route of upstream's `CommonKVBootstrapServer` and every kind of bad input: a bad
request gets a 4xx with a one-line message, never a 500, leaves the state unchanged,
and the server keeps answering.
"""

import copy
import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

from reference.common.bootstrap_server import MAX_BODY
from reference.fixed.bootstrap_server import BootstrapServer
from reference.prefill.mock import registration_body

ALL = {"prefill_dp_rank": -1, "prefill_cp_rank": -1, "target_tp_rank": -1, "target_pp_rank": -1}
RANK1 = {"prefill_dp_rank": 0, "prefill_cp_rank": 0, "target_tp_rank": 1, "target_pp_rank": 0}


def body(tp: int = 0, port: int = 5000, **override):
    return {**registration_body("127.0.0.1", port, tp, 2, 0, 1), **override}


@pytest.fixture
async def api():
    server = BootstrapServer()
    async with TestClient(TestServer(server.make_app())) as client:
        yield client, server.table


def state(table):
    return copy.deepcopy(
        (table.topology, table.prefill_port_table, table.registered_count, table.room_to_dp_rank)
    )


async def test_health(api):
    client, _ = api
    response = await client.get("/health")
    assert (response.status, await response.text()) == (200, "OK")


async def test_route_is_503_until_every_rank_registered_then_200(api):
    client, table = api
    assert (await client.put("/route", json=body(tp=0, port=5000))).status == 200
    response = await client.get("/route", params=RANK1)
    assert response.status == 503 and "1 of 2 ranks" in await response.text()
    assert (await client.get("/route", params=ALL)).status == 503
    assert (await client.put("/route", json=body(tp=1, port=5001))).status == 200
    response = await client.get("/route", params=RANK1)
    assert (response.status, await response.json()) == (200, {"rank_ip": "127.0.0.1", "rank_port": 5001})
    assert table.ready


async def test_all_ranks_minus_one_returns_the_parallel_info(api):
    client, _ = api
    for tp in (0, 1):
        await client.put("/route", json=body(tp=tp, port=5000 + tp))
    info = await (await client.get("/route", params=ALL)).json()
    assert info == {  # upstream's PrefillServerInfo, key for key: its decode builds it from these
        "attn_tp_size": 2, "attn_cp_size": 1, "dp_size": 1, "pp_size": 1, "page_size": 1,
        "kv_cache_dtype": "auto", "follow_bootstrap_room": True, "enable_dsa_cache_layer_split": False,
        "prefill_http_port": None, "target_tp_rank": None, "target_tp_ranks": None, "target_cp_ranks": None,
        "target_pp_ranks": None, "required_dst_info_num": None, "required_prefill_response_num": None,
    }  # fmt: skip


async def test_unknown_rank_is_404(api):
    client, _ = api
    for tp in (0, 1):
        await client.put("/route", json=body(tp=tp, port=5000 + tp))
    response = await client.get("/route", params={**RANK1, "target_tp_rank": 7})
    assert response.status == 404 and "tp=7" in await response.text()


async def test_topology_is_first_writer_wins_and_every_put_counts(api):
    """As upstream: a later PUT cannot change the topology, and a re-registration counts again."""
    client, table = api
    await client.put("/route", json=body(tp=0, port=5000))
    await client.put("/route", json=body(tp=0, port=5002, page_size=16))
    assert table.topology["page_size"] == 1
    assert table.registered_count == 2 and table.ready  # rank 1 never registered, yet "ready"
    assert (await client.get("/route", params=RANK1)).status == 404


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"{not json", "malformed JSON body"),
        (b"\xff\xfe", "malformed JSON body"),
        (b"[1, 2]", "body must be a JSON object, got list"),
        (
            json.dumps({k: v for k, v in body().items() if k != "rank_port"}).encode(),
            "missing field 'rank_port'",
        ),
        (json.dumps(body(attn_tp_rank="0")).encode(), "'attn_tp_rank' must be an integer, got str"),
        (json.dumps(body(attn_tp_size=True)).encode(), "'attn_tp_size' must be an integer, got bool"),
        (json.dumps(body(page_size=1.5)).encode(), "'page_size' must be an integer, got float"),
        (json.dumps(body(attn_tp_rank=2)).encode(), "'attn_tp_rank' = 2 outside 0..1"),
        (json.dumps(body(pp_rank=-1)).encode(), "'pp_rank' = -1 outside 0..0"),
        (json.dumps(body(rank_port=70000)).encode(), "'rank_port' = 70000 outside 1..65535"),
        (json.dumps(body(rank_ip="")).encode(), "'rank_ip' must be an IP address"),
        (json.dumps(body(kv_cache_dtype=3)).encode(), "'kv_cache_dtype' must be a non-empty string"),
        (json.dumps(body(prefill_http_port="x")).encode(), "'prefill_http_port' must be an integer"),
        (
            json.dumps(body(attn_tp_size=4, attn_tp_rank=3)).encode(),
            "rank 3 outside the registered attn_tp_size 2",
        ),
    ],
)
async def test_bad_registration_is_400_and_changes_nothing(api, raw, needle):
    client, table = api
    await client.put("/route", json=body(tp=0))
    before = state(table)
    response = await client.put("/route", data=raw)
    text = await response.text()
    assert response.status == 400 and needle in text and "\n" not in text
    assert state(table) == before
    assert (await client.get("/health")).status == 200


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({}, "missing query parameter(s): prefill_dp_rank, prefill_cp_rank, target_tp_rank, target_pp_rank"),
        (
            {k: v for k, v in RANK1.items() if k != "target_pp_rank"},
            "missing query parameter(s): target_pp_rank",
        ),
        ({**RANK1, "target_tp_rank": "one"}, "'target_tp_rank' must be an integer, got 'one'"),
        ({**RANK1, "prefill_dp_rank": "1_0"}, "'prefill_dp_rank' must be an integer"),
        ({**RANK1, "prefill_cp_rank": "9" * 30}, "'prefill_cp_rank' must be an integer"),
    ],
)
async def test_bad_route_query_is_400(api, params, needle):
    client, _ = api
    response = await client.get("/route", params=params)
    assert response.status == 400 and needle in await response.text()


@pytest.mark.parametrize(
    ("method", "path"),
    [("DELETE", "/route"), ("POST", "/route"), ("PUT", "/health"), ("GET", "/register_dp_rank"),
     ("GET", "/query_dp_ranks"), ("PATCH", "/route")],
)  # fmt: skip
async def test_wrong_method_is_405(api, method, path):
    client, _ = api
    response = await client.request(method, path)
    assert response.status == 405 and "not allowed" in await response.text()


async def test_unknown_path_is_404(api):
    client, _ = api
    assert (await client.get("/nope")).status == 404


async def test_body_over_the_limit_is_413_and_changes_nothing(api):
    client, table = api
    before = state(table)
    response = await client.put("/route", data=b"x" * (MAX_BODY + 1))
    assert response.status == 413 and "limit" in await response.text()
    response = await client.post("/query_dp_ranks", data=b"[" * (MAX_BODY * 2))
    assert response.status == 413
    assert state(table) == before
    assert (await client.get("/health")).status == 200


async def test_room_to_dp_rank_roundtrip(api):
    client, table = api
    for room, dp in ((7, 1), (8, 0)):
        response = await client.post("/register_dp_rank", json={"bootstrap_room": room, "dp_rank": dp})
        assert (response.status, await response.text()) == (200, "OK")
    response = await client.post("/query_dp_ranks", json={"bootstrap_rooms": [7, 8, 9]})
    assert await response.json() == {"7": 1, "8": 0}
    assert set(table.room_to_dp_rank) == {7, 8}


@pytest.mark.parametrize(
    ("path", "payload", "needle"),
    [
        ("/register_dp_rank", {"dp_rank": 0}, "missing field 'bootstrap_room'"),
        ("/register_dp_rank", {"bootstrap_room": -1, "dp_rank": 0}, "'bootstrap_room' = -1 outside"),
        ("/register_dp_rank", {"bootstrap_room": 1, "dp_rank": "0"}, "'dp_rank' must be an integer"),
        ("/register_dp_rank", {"bootstrap_room": 2**64, "dp_rank": 0}, "'bootstrap_room' = "),
        ("/query_dp_ranks", {}, "'bootstrap_rooms' must be a list"),
        ("/query_dp_ranks", {"bootstrap_rooms": "7"}, "'bootstrap_rooms' must be a list"),
        ("/query_dp_ranks", {"bootstrap_rooms": [1, "2"]}, "must hold room ids"),
        ("/query_dp_ranks", {"bootstrap_rooms": [True]}, "must hold room ids"),
    ],
)
async def test_bad_dp_rank_requests_are_400_and_change_nothing(api, path, payload, needle):
    client, table = api
    await client.post("/register_dp_rank", json={"bootstrap_room": 5, "dp_rank": 1})
    before = state(table)
    response = await client.post(path, json=payload)
    assert response.status == 400 and needle in await response.text()
    assert state(table) == before
