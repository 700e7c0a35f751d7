"""The notebooks' pictures render headless and carry the text they claim to show."""

import pytest

pytest.importorskip("matplotlib", reason="plots need the `notebooks` extra (matplotlib)")

from reference.teaching import plots, runs, sequences

PNG = b"\x89PNG\r\n\x1a\n"


def test_sequence_picture_numbers_every_step():
    sequence = sequences.interleaving("live-set-race", "buggy")
    picture = plots.sequence_picture(sequence)
    assert picture._repr_png_().startswith(PNG)
    texts = picture.texts()
    assert set(sequence.actors) <= set(texts)
    for number, step in enumerate(sequence.steps, start=1):
        assert f"{number}. {step.label}" in texts


def test_result_pictures_show_lanes_series_and_counts():
    results = runs.run_all("live-set-race")
    timeline = plots.timeline_picture(results, "live-set-race")
    assert timeline.png().startswith(PNG)
    assert "first-failure-handled\n1 rooms failed" in timeline.texts()
    from reference.lessons.live_set_race import teaching as live_set

    probes = {r.variant: live_set.heartbeat_probes(r) for r in results}
    assert probes == {"buggy": [5.0, 10.0], "fixed": [5.0, 10.0, 15.0, 20.0, 25.0]}, (
        "a dead heartbeat probes no more"
    )
    ticked = plots.timeline_picture(results, "t", ticks=probes, tick_label="heartbeat probe")
    assert "heartbeat probe" in ticked.texts()
    bars = {"first_failed": ("rooms failed", 3)}
    counts = plots.counts_picture(results, bars, "counts").texts()
    assert "rooms failed\n(should be 3)" in counts
    assert {"1", "3", "should be"} <= set(counts), (
        "each bar shows its value (buggy 1, fixed 3), a legend the dotted line"
    )
    leak = runs.run_all("failed-resurrect")
    series = plots.series_picture(leak, "sizes", "leak", "late aborts", "entries")
    assert {"buggy", "fixed", "late aborts"} <= set(series.texts())


def test_heartbeat_spans_shade_the_dead_thread():
    from reference.lessons.live_set_race import teaching as live_set

    buggy, fixed = runs.run_all("live-set-race")
    assert live_set.heartbeat_spans(buggy)[-1] == (10.0, 25.0, "heartbeat thread dead", False)
    assert all(healthy for *_, healthy in live_set.heartbeat_spans(fixed))
    spans = {r.variant: live_set.heartbeat_spans(r) for r in (buggy, fixed)}
    assert "heartbeat thread dead" in plots.timeline_picture([buggy, fixed], "t", spans=spans).texts()


def test_topology_picture_draws_every_box_and_labelled_arrow():
    from reference.teaching.sequences import Edge, Node, Topology

    topology = Topology(
        "who talks to whom",
        (Node("decode", 0, 0, "decode"), Node("bootstrap\nserver", 2, 1, "prefill")),
        (
            Edge("decode", "bootstrap\nserver", "GET /route"),
            Edge("bootstrap\nserver", "decode", "reply", 0.2),
        ),
    )
    picture = plots.topology_picture(topology)
    assert picture.png().startswith(PNG)
    assert {"decode", "bootstrap\nserver", "GET /route", "reply", "prefill"} <= set(picture.texts())
    with pytest.raises(ValueError, match="do not exist"):
        Topology("t", (Node("a", 0, 0),), (Edge("a", "b", "x"),))


def test_outcome_picture_and_nested_detail_keys():
    from reference.lessons.stale_bootstrap import teaching as stale

    results = runs.run_all("stale-bootstrap")
    picture = plots.outcome_picture(results, "stream", caption=stale.ports_of)
    assert picture.png().startswith(PNG)
    assert "41003,41004" in picture.texts() and "Success" in picture.texts()
    ticks = [t.get_text() for t in picture.figure.axes[0].get_xticklabels()]
    assert ticks == [str(n) for n in range(1, len(ticks) + 1)], (
        "requests numbered 1..N, no gap at the restart"
    )
    colours = {line.get_color() for line in picture.figure.axes[0].get_lines()}
    assert not colours & set(plots.COLOURS.values()), "outcomes do not borrow a variant's colour"
    refs = runs.run_all("task-refs")
    assert plots.detail(refs[0], ("bootstrap server", "rooms_left")) == [8, 16]
    series = plots.series_picture(refs, ("bootstrap server", "rooms_left"), "t", "jumps", "entries")
    assert series.png().startswith(PNG)
