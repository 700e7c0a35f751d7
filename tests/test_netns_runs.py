"""Nemeses, histories, the checker and the timeline on netns.

The checker and the picture are tested on hand-made histories (no namespaces needed);
one real run partitions decode from prefill past the heartbeat's detection and reads
its history: the requests during the fault fail with a reason, none is lost, and the
verdict is `bug` exactly when a request after the heal failed or a failed room's pages
were written after the heal (the late-write residual).
"""

from __future__ import annotations

import html
import itertools
import re

import pytest

from reference.netns import checker, ns
from reference.netns.history import History
from reference.netns.timeline import svg

needs_netns = pytest.mark.skipif(bool(ns.unavailable()), reason=ns.unavailable())


def _history() -> History:
    ticks = iter(range(100))
    history = History(clock=lambda: float(next(ticks)))  # each reading one second later
    ok = history.invoke("decode", "request", 1)
    history.complete(ok, "ok")
    fault = history.fault("partition decode<->prefill-0", ("decode", "prefill-0"))
    failed = history.invoke("decode", "request", 2)
    history.complete(failed, "fail", why="waiting timeout")
    history.heal(fault)
    after = history.invoke("decode", "request", 3)
    history.complete(after, "fail", why="stale port")
    history.invoke("decode", "request", 4)  # never completes: lost
    return history


def test_the_checker_names_failed_lost_and_broken_invariants():
    checked = checker.check(_history(), [checker.after_heal_all_ok, checker.no_fail_without_fault])
    assert checked.verdict == "bug"
    assert checked.lost == [3]
    assert checked.failed[1] == "waiting timeout (during: partition decode<->prefill-0)"
    assert checked.failed[2] == "stale port (during: no fault)"
    assert any("op 2 (request 3) invoked after every heal ended fail" in v for v in checked.violations)
    assert any("op 2 (request 3) failed with no fault active" in v for v in checked.violations)


def test_a_clean_history_is_ok_and_a_completion_is_recorded_once():
    history = History()
    op = history.invoke("decode", "request", 1)
    history.complete(op, "ok")
    with pytest.raises(ValueError, match="completed twice"):
        history.complete(op, "fail")
    assert checker.check(history, [checker.after_heal_all_ok]).verdict == "ok"


def test_the_timeline_has_a_lane_per_host_a_bar_per_op_and_shaded_faults():
    picture = svg(_history(), "partition on fixed")
    assert picture.startswith("<svg") and picture.rstrip().endswith("</svg>")
    assert ">decode<" in picture and ">prefill-0<" in picture
    assert picture.count('class="op fail"') == 2 and picture.count('class="op ok"') == 1  # the bars
    assert picture.count('class="op lost"') == 1  # the lost op
    assert picture.count('class="fault"') == 2  # the partition, shaded on both hosts
    assert "partition decode&lt;-&gt;prefill-0: 3.00 s to 6.00 s" in picture  # its label, with times


def _texts(picture: str) -> list[tuple[float, str, str]]:
    """(x, anchor, text) of every label."""
    label = r'<text x="([\d.]+)" y="[\d.]+" fill="[^"]+"( text-anchor="\w+")?[^>]*>([^<]*)<'
    found = re.findall(label, picture)
    return [(float(x), a.split('"')[1] if a else "start", html.unescape(t)) for x, a, t in found]


def test_the_timeline_keeps_every_label_inside_its_frame_and_no_bar_hides_another():
    ticks = iter(x / 10 for x in range(1000))
    history = History(clock=lambda: next(ticks))
    for room in range(6):  # quick requests one after the other: each bar at least 3 px wide
        history.complete(history.invoke("decode", "request", room), "ok")
    late = history.fault("a fault with a long name that starts near the right edge", ("prefill-0",))
    history.heal(late)
    title = "late-kv-write on sglang-0.5.23: " + "a long symptom " * 30
    picture = svg(history, title)
    width = float(re.search(r'<svg [^>]*width="(\d+)"', picture)[1])  # type: ignore[index]
    for x, anchor, text in _texts(picture):
        left = x - 6.2 * len(text) * {"start": 0, "middle": 0.5, "end": 1}[anchor]
        assert left >= 0 and left + 6.2 * len(text) <= width + 1, (x, anchor, text)
    bars = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"[^>]*class="op', picture)
    spans = sorted((float(y), float(x), float(x) + float(w)) for x, y, w in bars)
    for (y1, _, right), (y2, left, _) in itertools.pairwise(spans):
        assert y1 != y2 or right < left, "two bars overlap on one row"


@pytest.mark.netns
@needs_netns
def test_a_partition_past_the_heartbeat_fails_its_requests_and_heals(tmp_path):
    from reference.netns.runs import main, run

    result = run("partition", "fixed")
    result.pop("_history")
    ops = result["history"]["ops"]
    healed = result["history"]["faults"][0]["healed"]
    during = [op for op in ops if op["index"] >= 2 and op["invoked"] < healed]
    after = [op for op in ops if op["invoked"] > healed]
    assert [op["type"] for op in ops[:2]] == ["ok", "ok"]
    assert during and all(op["type"] == "fail" and op["why"] for op in during)
    assert len(after) == 3 and all(op["completed"] is not None for op in after)
    assert result["lost"] == []
    # The verdict follows the history: bug exactly when a request after the heal failed
    # (TCP's retransmission backoff can hold the queued messages past the 1 s timeout) or
    # a failed room's pages were written after the heal.
    broken = any(op["type"] != "ok" for op in after) or bool(result["late_written_rooms"])
    assert result["verdict"] == ("bug" if broken else "ok")
    assert result["setup_s"] > 0 and result["teardown_s"] > 0
    assert main(["--fault", "bandwidth", "--variant", "fixed", "--report", str(tmp_path)]) == 0
    assert (tmp_path / "bandwidth-fixed.svg").read_text().startswith("<svg")


@pytest.mark.netns
@needs_netns
def test_the_recovery_benchmark_has_netns_rows():
    from benchmarks import recovery, validate
    from benchmarks.modes import SMOKE
    from benchmarks.recovery_metrics import sweep_label

    data = recovery.run(SMOKE, transports=("netns",))
    assert validate.check_recovery(data, SMOKE) == []
    (sweep,) = data["sweeps"]
    assert sweep["transport"] == "netns" and sweep_label(sweep).startswith("netns, upstream")
    runs = {name: v["runs"][0] for name, v in sweep["variants"].items()}
    assert all(run["requests"] and run["registered_after_s"] > 0 for run in runs.values())
    # before the restart, requests crossed the namespaces and (most) succeeded
    assert all(run["sent_before_restart"] > run["failed_before_restart"] for run in runs.values())


def test_report_writes_a_history_and_its_picture_for_each_result_with_one(tmp_path):
    from reference.harness.result import Result
    from reference.netns import report

    data = _history().to_json()
    again = History.from_json(data)
    assert [vars(op) for op in again.ops] == data["ops"] and again.now() == max(
        op["completed"] or op["invoked"] for op in data["ops"]
    )
    with_history = Result("late-kv-write", "fixed", "netns", "bug", "bug", "s", details={"history": data})
    upstream = Result("late-kv-write", "sglang-0.5.23", "netns", "bug", "bug", "s", details={"history": data})
    without = Result("late-kv-write", "fixed", "mock", "bug", "bug", "s")
    written = report.write([with_history, upstream, without], tmp_path)
    assert sorted(p.name for p in written) == [
        "late-kv-write-fixed-netns.json",
        "late-kv-write-fixed-netns.svg",
        "late-kv-write-sglang-0.5.23-netns.json",  # the release's dots stay in the name
        "late-kv-write-sglang-0.5.23-netns.svg",
    ]
    assert (tmp_path / "late-kv-write-fixed-netns.svg").read_text().count('class="op fail"') == 2


def test_without_root_one_line_says_why(monkeypatch, capsys):
    from reference import cli
    from reference.netns import runs

    monkeypatch.setattr(ns.os, "geteuid", lambda: 1000)
    assert ns.unavailable() == "network namespaces need root (run as root, or skip the netns tier)"
    assert cli.main(["--transport", "netns"]) == 2
    assert runs.main(["--fault", "pause"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "python -m reference: error: --transport netns: network namespaces need root "
        "(run as root, or skip the netns tier)",
        "python -m reference.netns.runs: error: network namespaces need root "
        "(run as root, or skip the netns tier)",
    ]
