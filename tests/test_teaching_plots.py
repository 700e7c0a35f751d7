"""The notebooks' pictures render headless and carry the text they claim to show."""

import itertools

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


def test_the_same_step_has_the_same_colour_in_both_forms():
    for lesson in sequences.LESSONS_DRAWN:
        buggy, fixed = (sequences.interleaving(lesson, v) for v in ("buggy", "fixed"))
        kinds = {step.label: step.kind for step in buggy.steps}
        for step in fixed.steps:
            assert kinds.get(step.label, step.kind) == step.kind, f"{lesson}: {step.label!r}"


def test_stale_bootstrap_step_7_names_what_ends_the_request():
    step = sequences.interleaving("stale-bootstrap", "buggy").steps[6]
    assert "300 s waiting timeout" in step.label


def test_failed_resurrect_diagram_opens_the_room_as_the_by_hand_cell_does():
    # notebook 01's by-hand cell: update_status(7, Bootstrapping), then WaitingForInput
    first = sequences.interleaving("failed-resurrect", "buggy").steps[0].label
    assert first.index("Bootstrapping") < first.index("WaitingForInput")


def test_task_refs_note_carries_the_counts_the_run_measures():
    import re

    result = runs.run("task-refs", "buggy")
    hung = re.search(r"(\d+) in-flight requests hung", result.symptom)
    routed = re.search(r"(\d+) of (\d+) new requests routed", result.symptom)
    assert hung and routed, result.symptom
    note = sequences.interleaving("task-refs", "buggy").steps[-1].label
    assert f"its {hung[1]} in-flight" in note and f"{routed[1]} of {routed[2]} new" in note


def test_timeline_colours_outcomes_starts_at_zero_and_keeps_labels_inside():
    import reference.buggy
    import reference.fixed
    from reference.lessons.stale_bootstrap import teaching as stale

    drawn = [stale.restart_timeline(form) for form in (reference.buggy, reference.fixed)]
    picture = plots.timeline_picture(
        [r for r, _, _ in drawn],
        "t",
        spans={r.variant: s for r, s, _ in drawn},
        ticks={r.variant: p for r, _, p in drawn},
        event_lines=("prefill restart",),
    )
    ax = picture.figure.axes[0]
    assert ax.get_xlim()[0] == 0
    markers = [line for line in ax.lines if line.get_marker() in ("o", "X") and len(line.get_xdata())]
    assert markers and all(line.get_color() not in plots.COLOURS.values() for line in markers)
    spots = sorted((float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in markers)
    right = ax.get_xlim()[1]
    for (x0, y0), (x1, y1) in itertools.pairwise(spots):
        assert abs(x1 - x0) >= 0.02 * right or abs(y1 - y0) > 0.1, "two markers overlap"
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(picture.figure).get_renderer()
    picture.figure.draw(renderer)  # lay the texts out
    frame = ax.get_window_extent(renderer)
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        assert frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1, f"outside the frame: {text.get_text()!r}"
