"""The helpers behind the mechanism cells of notebooks 03 and 04.

Each helper is checked on what happened when it ran the real components, never on which
variant it was handed: the source it shows is the code that runs, the benches report the
cache and the loops as they are, the timeline's probes are the heartbeat's own count, and
the explorer's findings come from a real exploration.
"""

import importlib.util

import numpy as np
import pytest

import reference.buggy
import reference.fixed
from reference.harness.result import Event, Result
from reference.lessons.stale_bootstrap import teaching as stale
from reference.lessons.task_refs import teaching as tasks
from reference.status import KVPoll
from reference.teaching import explorer, plots, sources


# -- sources ----------------------------------------------------------------------------
def test_before_after_shows_each_variants_own_method_headed_by_file_and_line():
    shown = sources.before_after("KVReceiver", "_setup_bootstrap_infos")
    assert shown.before.where.startswith("reference/buggy/receiver.py:")
    assert shown.after.where.startswith("reference/fixed/receiver.py:")
    assert shown.before.text.startswith("def _setup_bootstrap_infos(self)")
    assert "# BUG(stale-bootstrap)" in shown.before.text and "# FIX(stale-bootstrap)" in shown.after.text
    text = repr(shown)
    assert text.index("before the fix") < text.index("after it") and "<table>" in shown._repr_html_()


def test_before_after_refuses_a_method_a_variant_only_inherits():
    with pytest.raises(ValueError, match="does not define invalidate_cached_bootstrap_infos itself"):
        sources.before_after("KVReceiver", "invalidate_cached_bootstrap_infos")


def test_source_is_the_running_code():
    shown = repr(sources.source(reference.fixed.KVReceiver.invalidate_cached_bootstrap_infos))
    first = reference.fixed.KVReceiver.invalidate_cached_bootstrap_infos.__code__.co_firstlineno
    assert shown.startswith(
        f"# reference/fixed/receiver.py:{first} KVReceiver.invalidate_cached_bootstrap_infos"
    )
    assert "is infos" in shown


def test_the_parking_and_interleaving_sources_name_the_code_that_orders_things():
    parking = repr(tasks.parking_source())
    assert "weakref.WeakSet()" in parking and "await waiter.wait()" in parking and "waiter.set()" in parking
    assert "async def _worker_watchdog" in parking
    ordering = repr(stale.interleaving_source())
    assert 'world.net.at("route", world.beside(' in ordering and 'self._fire("route", False' in ordering


# -- a timeline's event lines -----------------------------------------------------------
def test_event_lines_are_drawn_once_across_lanes_not_as_a_lanes_marker():
    events = [Event(1.0, "Success"), Event(2.0, "prefill restart", "ports [1] -> [2]"), Event(3.0, "Failed")]
    results = [
        Result("l", name, "mock", "ok", "ok", "", timeline=list(events)) for name in ("buggy", "fixed")
    ]
    drawn = plots.timeline_picture(results, "t", event_lines=("prefill restart",))
    assert drawn.texts().count("prefill restart\nports [1] -> [2]") == 1
    dashed = [line for line in drawn.figure.axes[0].lines if line.get_linestyle() == "--"]
    assert [np.asarray(line.get_xdata(), dtype=float).tolist() for line in dashed] == [[2.0, 2.0]]
    plain = plots.timeline_picture(results, "t")
    assert plain.texts().count("prefill restart\nports [1] -> [2]") == 2, (
        "without event_lines: a marker per lane"
    )


# -- lesson 03's bench and timeline ---------------------------------------------------------
@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed], ids=["buggy", "fixed"])
def test_bench_reports_the_cache_the_receivers_left(variant):
    bench = stale.Bench(variant)
    rooms = {}
    for room in (1, 2, 3):
        if room == 2:
            bench.prefill.restart()
        receiver = variant.KVReceiver(bench.manager, stale.ADDR, room)
        receiver.init(0)
        receiver.send_metadata([0, 1])
        rooms[room] = (KVPoll(receiver.poll()), bench.cached_ports(), bench.look(receiver))
        receiver.clear()
    status, cached, look = rooms[3]
    assert f"poll() = {status.name}" in look and f"GET /route so far: {bench.net.route_fetches}" in look
    assert cached == {stale.KEY: [int(i["rank_port"]) for i in receiver.bootstrap_infos]}
    if status == KVPoll.Success:  # fixed: the third request reached the restarted rank
        assert cached[stale.KEY] == bench.prefill.rank_ports
    else:  # buggy: still the pre-restart port
        assert cached[stale.KEY] != bench.prefill.rank_ports


def test_restart_timeline_probes_are_the_heartbeats_own_and_the_verdicts_what_happened():
    lanes = {}
    for variant in (reference.buggy, reference.fixed):
        result, spans, probes = stale.restart_timeline(variant)
        lanes[result.variant] = (result, spans, probes)
        assert probes == [5.0 * k for k in range(1, len(probes) + 1)], "every 5 s of virtual time"
        assert probes[-1] >= max(e.t for e in result.timeline)
        failed = [e for e in result.timeline if e.what == "Failed"]
        assert [s for s in spans if not s[3]] and len([s for s in spans if not s[3]]) == len(failed)
        assert all(end - start == 300.0 for start, end, _, ok in spans if not ok), "the waiting timeout"
    assert lanes["buggy"][0].verdict == "bug" and lanes["fixed"][0].verdict == "ok"
    assert [e.what for e in lanes["fixed"][0].timeline][-1] == "Success"


# -- lesson 04's benches ----------------------------------------------------------------------
@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed], ids=["buggy", "fixed"])
def test_loop_lab_runs_start_and_reports_what_gc_destroyed(variant):
    lab = tasks.LoopLab()
    try:
        pool = lab.worker_pool()
        dispatcher = variant.DPDispatcher(pool, tasks.CONFIG)
        lab.run(pool.start())
        lab.call(dispatcher.start)
        started = lab.tasks()
        assert len(started) == 3
        seen = lab.collect_garbage()
        lab.run(pool.kill(1))
        noticed = 1 in dispatcher.dead_ranks
        lab.run(dispatcher.close())
    finally:
        lab.close()
    assert not lab._thread.is_alive() and lab.loop.is_closed()
    assert len(seen["destroyed while pending"]) + len(seen["still pending"]) == 3
    assert noticed == ("_worker_watchdog" not in seen["destroyed while pending"])
    assert noticed == (pool.exits.unread == 0)


@pytest.mark.parametrize("variant", [reference.buggy, reference.fixed], ids=["buggy", "fixed"])
def test_server_bench_starts_the_cleanup_on_the_servers_thread(variant):
    bench = tasks.ServerBench(variant)
    bench.server.start()
    try:
        started = bench.tasks()
        seen = bench.collect_garbage()
        assert bench.register_rooms(range(1, 9)) == 8
        after = bench.jump(250)
    finally:
        bench.server.close()
    assert started == ["BootstrapServerBase._cleanup_expired_entries"]
    survived = seen["still pending"] == started
    assert survived != bool(seen["destroyed while pending"])
    assert after == ({"room_to_dp_rank entries": 0, "cleanup rounds": 1} if survived else
                     {"room_to_dp_rank entries": 8, "cleanup rounds": 0})  # fmt: skip


# -- the explorer from a notebook ---------------------------------------------------------------
def test_an_unknown_property_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="no exploration 'nope'"):
        explorer.explore("stale-bootstrap", "nope")


@pytest.mark.timeout(120)
@pytest.mark.skipif(importlib.util.find_spec("frontrun") is None, reason="needs frontrun (the test extra)")
def test_explore_shows_a_counterexample_with_its_trace_and_the_count_it_measured():
    found = explorer.explore("stale-bootstrap", "hit-vs-eviction")
    verdicts = {f["variant"]: f["verdict"] for f in found.findings}
    assert not found.error and verdicts == {"buggy": "bug", "fixed": "ok"}
    text = repr(found)
    assert "KeyError" in text and "T0 receiver-init" in text and "T1 heartbeat-evicts" in text
    assert "--variant buggy --replay " in text
    count = next(f["interleavings"] for f in found.findings if f["variant"] == "fixed")
    assert count > 0 and f"fixed: OK      holds over all {count} interleavings (exhaustive)" in text
    assert " s " not in text.split("\n")[1], "no wall-clock time in the output"


@pytest.mark.timeout(60)
def test_explore_says_in_one_line_why_it_found_nothing():
    found = explorer.explore("stale-bootstrap", "hit-vs-eviction", variants=(), impls=["no.such.module"])
    assert found.findings == () and found.error and "\n" not in found.error
    assert repr(found).startswith("stale-bootstrap/hit-vs-eviction: ")


@pytest.mark.timeout(60)
@pytest.mark.skipif(importlib.util.find_spec("frontrun") is None, reason="needs frontrun (the test extra)")
def test_an_explorer_that_overruns_is_stopped_and_said_so(monkeypatch):
    monkeypatch.setattr(explorer, "BOUND", 0.2)
    found = explorer.explore("stale-bootstrap", "hit-vs-eviction", variants=("fixed",))
    assert found.findings == () and found.error == "the explorer did not finish within 0.2 s"
