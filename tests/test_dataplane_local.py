"""The data-plane contract in one process: discovery, page lists, memcpy and ZMQ planes."""

import importlib.util
import subprocess
import sys

import pytest

from reference.dataplane import (
    BACKENDS,
    BackendUnavailable,
    MemoryRegistration,
    available_backends,
    open_plane,
)
from reference.dataplane.base import page_runs
from reference.dataplane.discovery import backend_status
from reference.dataplane.pages import HostPages

PAGES, PAGE = 8, 64


def test_every_backend_is_listed_with_a_reason_when_unusable():
    statuses = available_backends()
    assert list(statuses) == list(BACKENDS)
    assert statuses["default"].usable
    for status in statuses.values():
        assert status.usable == (status.reason == "")
        assert "\n" not in status.reason


@pytest.mark.parametrize(
    ("name", "module"), [("mooncake", "mooncake"), ("nixl", "nixl_cu12"), ("torch", "torch")]
)
def test_a_missing_module_is_named_with_its_install_command(monkeypatch, name, module):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda n, *a: None if n.split(".")[0] in (module, "nixl") else real(n, *a),
    )
    status = backend_status(name)
    assert not status.usable
    assert status.reason.startswith("module ") and f"'.[{name}]'" in status.reason


def test_unknown_backend_and_wrong_transport_get_one_line():
    assert (
        backend_status("rdma").reason == "unknown backend 'rdma' (choose from default, mooncake, nixl, torch)"
    )
    with pytest.raises(BackendUnavailable, match="unknown backend 'rdma'"):
        open_plane("rdma")
    if backend_status("mooncake").usable:
        with pytest.raises(BackendUnavailable, match="use --transport loopback"):
            open_plane("mooncake", transport="mock")


def test_importing_the_package_pulls_in_no_optional_backend():
    optional = "('torch', 'mooncake', 'nixl_cu12')"
    code = f"import sys, reference.dataplane; print([m for m in {optional} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_page_runs_merge_pages_contiguous_on_both_sides():
    assert page_runs([0, 1, 2, 5, 6], [3, 4, 5, 0, 2]) == [(0, 3, 3), (5, 0, 1), (6, 2, 1)]


@pytest.mark.parametrize(
    ("src", "dst", "needle"),
    [
        ([0, 1], [0], "2 source pages but 1 destination"),
        ([8], [0], "source page 8 out of range"),
        ([0], [-1], "destination page -1"),
    ],
)
def test_malformed_writes_are_refused_before_anything_moves(src, dst, needle):
    with open_plane("default", transport="mock") as plane:
        pages = HostPages(PAGES, PAGE)
        with pytest.raises(ValueError, match=needle):
            plane.write_pages(pages, src, plane.register(pages), dst)


def test_registration_survives_a_json_round_trip():
    registration = MemoryRegistration(
        "nixl", "rank-1", 1 << 40, PAGES, PAGE, meta="bWV0YQ==", device="cuda:1"
    )
    assert MemoryRegistration.from_json(registration.to_json()) == registration


@pytest.mark.parametrize("transport", ["mock", "loopback"])
def test_default_plane_moves_pages_and_refuses_a_closed_peer(transport):
    writer = open_plane("default", transport=transport)
    receiver = open_plane("default", transport=transport)
    try:
        src, dst = writer.allocate(PAGES, PAGE), receiver.allocate(PAGES, PAGE)
        sent, registration = src.fill(seed=5), receiver.register(dst)
        result = writer.write_pages(src, range(PAGES), registration, range(PAGES))
        assert result.ok and result.nbytes == PAGES * PAGE and dst.checksum() == sent
        receiver.close()  # what a restart does to every registration it made
        stale = writer.write_pages(src, [0], registration, [0], timeout=0.5)
        assert not stale.ok and stale.error.startswith("TransferFailed:")
    finally:
        receiver.close()
        writer.close()
