"""Schemathesis fuzz of the bootstrap server against its OpenAPI document.

Every operation of `reference/common/bootstrap_openapi.yaml` gets generated requests,
half valid by the schema and half not (schemathesis' positive and negative modes),
sent over real HTTP to a server on 127.0.0.1. Each answer must: not be a 5xx; be one
line when it is a 4xx; leave the state unchanged when it is a 4xx; conform to the
document (status, content type, body schema); and a request the document forbids must
be rejected. The cases are the same on every run (`derandomize`); set
BOOTSTRAP_FUZZ_SEED to draw others.
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
SEED = os.environ.get("BOOTSTRAP_FUZZ_SEED")
# (method, path, cases): 1,001 in all; /health has exactly one valid request and no invalid one.
OPERATIONS = [("GET", "/health", 1), ("PUT", "/route", 250), ("GET", "/route", 250),
              ("POST", "/register_dp_rank", 250), ("POST", "/query_dp_ranks", 250)]  # fmt: skip


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


def fuzz_settings(cases: int):
    chosen = settings(
        max_examples=cases,
        deadline=None,
        database=None,
        derandomize=SEED is None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    return (lambda test: seed(int(SEED))(chosen(test))) if SEED is not None else chosen


@pytest.mark.parametrize(("method", "path", "cases"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_every_generated_request_is_answered_by_the_document_without_5xx(method, path, cases):
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

        @fuzz_settings(cases)
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
