"""Lesson `task-refs` on the bootstrap server: the cleanup task, its tick source, the transports."""

from __future__ import annotations

import types

import pytest

import reference.buggy
import reference.fixed
from reference.aioloop import run_on_jump_loop
from reference.common.cleanup_ticks import Metronome, SleepTicks
from reference.lessons import LESSONS, Options, run_lesson
from reference.lessons.task_refs import bootstrap_probe
from reference.lessons.task_refs.bootstrap_probe import INTERVAL, probe
from reference.transport.base import TransportError
from reference.transport.loopback import LoopbackTransport
from reference.transport.mock import MockNetwork
from reference.variants import Variant

pytestmark = pytest.mark.lesson(id="task-refs")
TRANSPORTS = ["mock", pytest.param("loopback", marks=pytest.mark.loopback)]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_buggy_cleanup_is_destroyed_and_stale_mappings_grow(transport):
    found = bootstrap_probe.observe(reference.buggy, transport)
    assert found.problems == [
        "Task was destroyed but it is pending! (_cleanup_expired_entries, by gc.collect())",
        "stale room_to_dp_rank entries grow: 8 after 250 s, 16 after 500 s "
        "(an entry should live at most 240 s; 0 cleanup rounds ran)",
    ]
    d = found.details
    assert (d["survived_gc"], d["waiting_after_gc"], d["cleanup_rounds"]) == (False, 0, 0)
    assert d["beats"] == 1, "the metronome's first beat came, with nobody left to wake"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fixed_cleanup_survives_and_expires_every_room(transport):
    found = bootstrap_probe.observe(reference.fixed, transport)
    assert found.problems == [], found.problems
    d = found.details
    assert d["destroyed"] == [] and d["survived_gc"] and d["waiting_after_gc"] == 1
    assert (d["rooms_left"], d["cleanup_rounds"]) == ([0, 0], 2)
    assert "2 rounds expired every room within 250 s" in found.fine


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_with_upstreams_sleep_the_bare_cleanup_survives(transport):
    """The timer heap holds a sleeping task: upstream's bug was latent here too."""
    found = probe(reference.buggy, transport, SleepTicks(INTERVAL))
    assert found.problems == []
    assert (found.details["rooms_left"], found.details["cleanup_rounds"]) == ([0, 0], 2)


def test_a_metronome_that_holds_its_waiters_keeps_the_bare_cleanup_alive():
    found = probe(reference.buggy, "mock", Metronome(INTERVAL, hold_waiters=True))
    assert found.problems == [] and found.details["survived_gc"]


def test_a_fixed_dispatcher_with_a_buggy_server_is_still_a_bug():
    mixed = types.ModuleType("mixed")
    mixed.DPDispatcher = reference.fixed.DPDispatcher  # type: ignore[attr-defined]
    mixed.BootstrapServer = reference.buggy.BootstrapServer  # type: ignore[attr-defined]
    result = run_lesson(LESSONS["task-refs"], Variant("mixed", mixed, "ok"), Options())
    assert result.verdict == "bug"
    assert result.symptom.startswith("bootstrap server: Task was destroyed but it is pending!")
    assert result.details["DP dispatcher"]["destroyed"] == []


def test_a_variant_without_a_bootstrap_server_is_unknown():
    only = types.ModuleType("only_dispatcher")
    only.DPDispatcher = reference.fixed.DPDispatcher  # type: ignore[attr-defined]
    result = run_lesson(LESSONS["task-refs"], Variant("only", only, "ok"), Options())
    assert (result.verdict, result.symptom) == ("unknown", "variant lacks BootstrapServer")


def test_metronome_wakes_after_its_interval_like_a_sleep():
    async def main(loop):
        metronome = Metronome(120.0)
        woke = loop.create_task(metronome.next_tick())
        await loop.advance(119.0)
        early = woke.done()
        await loop.advance(1.0)
        return early, woke.done(), metronome.beats, metronome.waiting

    assert run_on_jump_loop(main) == (False, True, 1, 0)


def test_a_server_that_does_not_listen_has_no_port():
    with reference.fixed.BootstrapServer(listen=False) as server:
        with pytest.raises(RuntimeError, match="listen=False"):
            _ = server.port
        assert server.table.handle("GET", "/health", {}, b"").status == 200


def test_register_dp_rank_on_the_mock_needs_a_live_server():
    net = MockNetwork()
    with pytest.raises(TransportError, match="connection refused"):
        net.register_dp_rank("10.0.0.1:8998", 1, 0)


def test_register_dp_rank_on_loopback_refuses_other_hosts():
    http = LoopbackTransport()
    try:
        with pytest.raises(TransportError, match=r"only talks to 127\.0\.0\.1"):
            http.register_dp_rank("10.0.0.1:8998", 1, 0)
    finally:
        http.close()
