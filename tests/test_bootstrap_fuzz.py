"""Schemathesis fuzz of the bootstrap server against its OpenAPI document.

Every operation of `reference/common/bootstrap_openapi.yaml` gets generated requests,
valid by the schema or not (schemathesis' positive and negative modes), 1,009 in all,
sent over real HTTP to a server on 127.0.0.1. Each answer must: not be a 5xx; be one
line when it is a 4xx; leave the state unchanged when it is a 4xx; conform to the
document (status, content type, body schema); and a request the document forbids must
be rejected. The cases are the same on every run (fixed seeds); set
BOOTSTRAP_FUZZ_SEED=N to draw others.
"""

import copy
import os
from collections import Counter
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from reference.fixed.bootstrap_server import BootstrapServer
from reference.prefill.mock import registration_body

OPENAPI = Path(__file__).resolve().parents[1] / "reference" / "common" / "bootstrap_openapi.yaml"
SCHEMA = schemathesis.openapi.from_path(OPENAPI)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection]  # fmt: skip
SEED = int(os.environ.get("BOOTSTRAP_FUZZ_SEED", "0"))
CHUNK = 84  # cases per test item, so that each stays well inside the 60 s test timeout on a busy machine
# (method, path, chunks): 12 x 84 + 1 = 1,009 cases; /health has one valid request and no invalid one.
PLAN = [("GET", "/health", 0), ("PUT", "/route", 3), ("GET", "/route", 3), ("POST", "/register_dp_rank", 3),
        ("POST", "/query_dp_ranks", 3)]  # fmt: skip
ITEMS = [(m, p, c) for m, p, chunks in PLAN for c in range(max(chunks, 1))]


def state(table):
    with table._lock:
        return copy.deepcopy(
            (
                table.topology,
                table.prefill_port_table,
                table.registered_count,
                list(table.room_to_dp_rank.items()),
            )
        )


def fuzz_settings(cases: int, chunk: int):
    """Hypothesis settings: `cases` examples from a seed fixed by BOOTSTRAP_FUZZ_SEED and `chunk`."""
    chosen = settings(
        max_examples=cases,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    return lambda test: seed(SEED * 1000 + chunk)(chosen(test))


@pytest.mark.parametrize(("method", "path", "chunk"), ITEMS, ids=[f"{m} {p} {c}" for m, p, c in ITEMS])
def test_every_generated_request_is_answered_by_the_document_without_5xx(method, path, chunk):
    cases = 1 if path == "/health" else CHUNK
    operation = SCHEMA[path][method]
    modes = [schemathesis.GenerationMode.POSITIVE]
    if path != "/health":
        modes.append(schemathesis.GenerationMode.NEGATIVE)
    strategy = st.one_of(*(operation.as_strategy(mode) for mode in modes))
    statuses: Counter[int] = Counter()
    with BootstrapServer("127.0.0.1", 0) as server, requests.Session() as http:
        for tp in (0, 1):  # a ready two-rank prefill, so that GET /route can answer 200
            server.table.register(registration_body("127.0.0.1", 5000 + tp, tp, 2, 0, 1))
        base = f"http://127.0.0.1:{server.port}"

        @fuzz_settings(cases, chunk)
        @given(case=strategy)
        def one_case(case):
            before = state(server.table)
            response = case.call(base_url=base, session=http, timeout=5)
            statuses[response.status_code] += 1
            assert response.status_code < 500, response.text
            if 400 <= response.status_code < 500:
                assert "\n" not in response.text and "\r" not in response.text, response.text
                assert state(server.table) == before, f"rejected with {response.status_code} yet changed"
            case.validate_response(response, checks=CHECKS)

        one_case()
    print(f"{method} {path}: {statuses.total()} cases, statuses {dict(sorted(statuses.items()))}")  # with -s
    assert statuses.total() >= cases, f"only {statuses.total()} of {cases} cases generated: {statuses}"
    assert not [code for code in statuses if code >= 500]
