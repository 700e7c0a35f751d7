"""Pictures for the notebooks: sequence diagrams, scenario timelines, counters.

Everything is drawn on a bare `matplotlib.figure.Figure` (no pyplot, no GUI) and
rendered to PNG by the Agg canvas, so it works headless in CI. Each function returns a
`Picture`, which Jupyter shows through `_repr_png_`; tests read its text back.

One convention for every picture in the notebooks and the benchmarks (`benchmarks/plots.py`
imports it):

- one colour per variant (`COLOURS`: buggy red, fixed green, hardened blue), used for
  nothing else; request outcomes have their own colours and markers (`OUTCOMES`);
- a dotted line always means "what a correct run gives" (a target, "should be"), and is
  labelled so; events such as a restart are dashed grey lines;
- every number a bar stands for is written on it (a zero bar shows `0`), and labels stay
  inside the frame.
"""

from __future__ import annotations

import io
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from reference.harness.result import Event, Result
from reference.teaching.sequences import Sequence as Interleaving
from reference.teaching.sequences import Step, Topology

COLOURS = {"buggy": "#c62828", "fixed": "#2e7d32", "hardened": "#1565c0"}
OUTCOMES = {"Success": ("o", "#00838f"), "Failed": ("X", "#ef6c00")}  # marker, colour
SHOULD_BE: dict[str, Any] = {"colors": "#212121", "linestyles": ":", "linewidth": 1.4}  # the one dotted line
EVENT_LINE: dict[str, Any] = {"color": "#757575", "linestyle": "--", "linewidth": 1.0}
GROUP_COLOURS = ("#e3f2fd", "#fff3e0", "#f3e5f5", "#e8f5e9")
STEP_COLOURS = {"plain": "#222222", "bug": "#c62828", "fix": "#2e7d32", "error": "#c62828", "note": "#555555"}


class Picture:
    """A drawn figure: shown inline by Jupyter, saved with `png()`."""

    def __init__(self, figure: Figure) -> None:
        self.figure = figure

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
        return buffer.getvalue()

    def __repr__(self) -> str:  # stable text (no address): committed outputs stay identical
        titles = [ax.get_title(loc) for ax in self.figure.axes for loc in ("left", "center", "right")]
        suptitle = self.figure.get_suptitle() if hasattr(self.figure, "get_suptitle") else ""
        return f"Picture({next((t for t in [suptitle, *titles] if t), '')!r})"

    def _repr_png_(self) -> bytes:
        return self.png()

    def texts(self) -> list[str]:
        """Every piece of text on the figure (titles, labels, annotations)."""
        return [t.get_text() for t in self.figure.findobj(Text) if isinstance(t, Text) and t.get_text()]


def colour(variant: str) -> str:
    return COLOURS.get(variant, "#1565c0")


# -- sequence diagrams -----------------------------------------------------------
def sequence_picture(sequence: Interleaving) -> Picture:
    """Actors across the top, time going down, one numbered arrow or note per step."""
    n, rows = len(sequence.actors), len(sequence.steps)
    # at most 13 inches wide: a wide diagram (00's eight actors) shrinks its columns rather than
    # its text, so it stays readable at 900 px
    figure = Figure(figsize=(min(2.9 * n + 1.5, 13.0), 0.55 * rows + 1.6))
    ax = figure.add_subplot()
    ax.set_xlim(-1.0, n)
    ax.set_ylim(-(rows + 0.8), 0.7)
    ax.axis("off")
    ax.set_title(sequence.title, fontsize=11, loc="left")
    where = {actor: x for x, actor in enumerate(sequence.actors)}
    for actor, x in where.items():
        ax.text(
            x,
            0.2,
            actor,
            ha="center",
            va="center",
            fontsize=9 if n <= 6 else 8,
            bbox={"boxstyle": "round", "fc": "#eef3ff"},
        )
        ax.plot([x, x], [-0.1, -(rows + 0.6)], color="#bbbbbb", linestyle="--", linewidth=0.8)
    for row, step in enumerate(sequence.steps, start=1):
        _draw_step(ax, row, step, where[step.source], where[step.target])
    return Picture(figure)


def _draw_step(ax: Axes, row: int, step: Step, x0: float, x1: float) -> None:
    y, tint = -row, STEP_COLOURS[step.kind]
    weight = "bold" if step.kind in ("bug", "fix", "error") else "normal"
    label = f"{row}. {step.label}"
    if x0 == x1:
        style = "italic" if step.kind == "note" else "normal"
        box = {"boxstyle": "round", "fc": "white", "ec": tint}
        ha, x = _note_side(ax, x0)
        ax.text(
            x,
            y,
            label,
            ha=ha,
            va="center",
            fontsize=8,
            color=tint,
            weight=weight,
            style=style,
            bbox=box,
        )
        return
    ax.annotate("", xy=(x1, y), xytext=(x0, y), arrowprops={"arrowstyle": "->", "color": tint, "lw": 1.3})
    ax.text((x0 + x1) / 2, y + 0.12, label, ha="center", va="bottom", fontsize=8, color=tint, weight=weight)


def _note_side(ax: Axes, x: float) -> tuple[str, float]:
    """Where a note on lifeline `x` goes so that its box stays inside the frame: starting just
    left of the first lifeline, ending just right of the last, centred on the others."""
    low, high = ax.get_xlim()
    if x - low < 1.5:
        return "left", x - 0.4
    if high - x < 1.5:
        return "right", x + 0.4
    return "center", x


# -- who talks to whom ---------------------------------------------------------
def topology_picture(topology: Topology) -> Picture:
    """Boxes at their grid positions, one labelled arrow per edge, a colour per group."""
    xs, ys = [n.x for n in topology.nodes], [n.y for n in topology.nodes]
    # about 11 inches wide for 00's tour (1000 px at the notebook's 90 dpi): its text stays readable at 900
    inch_x, inch_y = 2.2, 1.3  # inches per grid unit
    figure = Figure(figsize=(inch_x * (max(xs) - min(xs) + 1.4), inch_y * (max(ys) - min(ys) + 1.6)))
    ax = figure.add_axes((0.0, 0.0, 1.0, 0.92))
    ax.set_xlim(min(xs) - 0.7, max(xs) + 0.7)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 1.0)
    ax.axis("off")
    figure.suptitle(topology.title, fontsize=11, x=0.01, ha="left")
    groups = sorted({n.group for n in topology.nodes})
    boxes = {n.name: _draw_node(ax, n.name, (n.x, n.y), groups.index(n.group)) for n in topology.nodes}
    for edge in topology.edges:
        _draw_edge(ax, boxes[edge.source], boxes[edge.target], edge.label, edge.bend, inch_x / inch_y)
    for group in filter(None, groups):
        members = [n for n in topology.nodes if n.group == group]
        x = sum(n.x for n in members) / len(members)
        ax.text(x, max(n.y for n in members) + 0.55, group, ha="center", fontsize=10, weight="bold")
    return Picture(figure)


def _draw_node(ax: Axes, name: str, xy: tuple[float, float], group: int) -> Text:
    box = {"boxstyle": "round,pad=0.5", "fc": GROUP_COLOURS[group % len(GROUP_COLOURS)], "ec": "#546e7a"}
    return ax.text(*xy, name, ha="center", va="center", fontsize=9, bbox=box, zorder=3)


def _draw_edge(ax: Axes, source: Text, target: Text, label: str, bend: float, aspect: float) -> None:
    """An arc3 arrow clipped at both boxes; its label sits on the curve's midpoint."""
    (x0, y0), (x1, y1) = source.get_position(), target.get_position()
    arrow = {"arrowstyle": "->", "lw": 1.1, "color": "#37474f", "connectionstyle": f"arc3,rad={bend}"}
    arrow |= {"patchA": source.get_bbox_patch(), "patchB": target.get_bbox_patch()}
    # Drawn after the boxes (zorder 4 > 3): a text's box is sized when it is drawn, and
    # the arrow is clipped to it.
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=arrow, zorder=4)
    # arc3 puts its control point `bend` times the chord length off the chord's middle, in
    # display space; the curve's midpoint is half-way there.
    mid_x = (x0 + x1) / 2 + bend / 2 * (y1 - y0) / aspect
    mid_y = (y0 + y1) / 2 - bend / 2 * (x1 - x0) * aspect
    label_box = {"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.9}
    ax.text(mid_x, mid_y, label, ha="center", va="center", fontsize=8, zorder=5, bbox=label_box)


# -- scenario results ------------------------------------------------------------
Span = tuple[float, float, str, bool]  # start, end, label, healthy


def timeline_picture(
    results: Sequence[Result],
    title: str,
    xlabel: str = "virtual seconds",
    spans: Mapping[str, Sequence[Span]] | None = None,
    ticks: Mapping[str, Sequence[float]] | None = None,
    tick_label: str = "probe",
    event_lines: Sequence[str] = (),
) -> Picture:
    """One lane per result, a marker and a label per timeline event.

    `spans` (by variant name) shades stretches of a lane, e.g. while a thread was alive:
    white when healthy, grey and hatched when not (never a variant's colour). `ticks` (by
    variant name) marks instants on a lane, e.g. each heartbeat probe, as short black bars
    named `tick_label`. Events named in `event_lines` (e.g. a restart) are not a lane's
    marker but a dashed grey line across every lane, labelled once at the top.
    """
    figure = Figure(figsize=(10, 1.3 * len(results) + 1.2))
    ax = figure.add_subplot()
    lines = {(e.t, e.what, e.detail) for r in results for e in r.timeline if e.what in event_lines}
    end = max(
        [e.t for r in results for e in r.timeline] + [t for v in (ticks or {}).values() for t in v] + [1.0]
    )
    right = end * 1.06  # the time axis runs from 0 to just past the last thing drawn
    for t, what, text in sorted(lines):
        ax.axvline(t, **EVENT_LINE)
        box = {"boxstyle": "round", "fc": "white", "ec": "none"}
        ax.text(
            t,
            len(results) - 0.2,
            f"{what}\n{text}",
            ha=_inside(t, right),
            va="center",
            fontsize=7.5,
            bbox=box,
        )
    shown: set[str] = set()
    for lane, result in enumerate(results):
        ax.axhline(lane, color="#dddddd", linewidth=1)
        for start, stop, label, healthy in (spans or {}).get(result.variant, ()):
            _draw_span(ax, lane, start, stop, label, healthy)
        probes = list((ticks or {}).get(result.variant, ()))
        ax.plot(
            probes, [lane] * len(probes), "|", color="#616161", markersize=11, markeredgewidth=0.7, zorder=4
        )
        events = [e for e in result.timeline if e.what not in event_lines]
        rises = _rises(events, right)
        for index, (event, rise) in enumerate(zip(events, rises, strict=True)):
            marker, tint = OUTCOMES.get(event.what, ("o", "#424242"))  # outcome colours, never a variant's
            ax.plot(event.t, lane + rise, marker, color=tint, markersize=7, zorder=5, clip_on=False)
            shown.add(event.what)
            offset = 0.18 if index % 2 == 0 else -0.3
            text = f"{event.what}\n{event.detail}" if event.detail else event.what
            ax.text(event.t, lane + rise + offset, text, ha=_inside(event.t, right), fontsize=7.5)
    handles = [
        ax.plot([], [], marker, color=tint, linestyle="none", label=what)[0]
        for what, (marker, tint) in OUTCOMES.items()
        if what in shown
    ]
    if ticks:
        handles += ax.plot([], [], "|", color="#616161", markersize=11, markeredgewidth=0.7, label=tick_label)
    if handles:
        ax.legend(handles=handles, loc="upper right", fontsize=8)
    ax.set_yticks(range(len(results)), [f"{r.variant}: {r.verdict}" for r in results])
    ax.set_ylim(-0.7, len(results) + (0.1 if lines else -0.3))
    ax.set_xlim(0, right)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=11, loc="left")
    return Picture(figure)


def _inside(t: float, right: float) -> str:
    """The text alignment that keeps a label at `t` inside an axis from 0 to `right`."""
    return "left" if t < 0.12 * right else "right" if t > 0.88 * right else "center"


def _rises(events: Sequence[Event], right: float) -> list[float]:
    """A lift per event so that two markers closer than 2% of the axis never overlap."""
    rises: list[float] = []
    for index, event in enumerate(events):
        near = index > 0 and abs(event.t - events[index - 1].t) < 0.02 * right
        rises.append(rises[-1] + 0.14 if near else 0.0)
    return rises


def _draw_span(ax: Axes, lane: int, start: float, end: float, label: str, healthy: bool) -> None:
    tint, hatch = ("#fafafa", None) if healthy else ("#d6d6d6", "//")
    ax.broken_barh(
        [(start, end - start)], (lane - 0.07, 0.14), facecolors=tint, hatch=hatch, edgecolor="#9e9e9e"
    )
    ax.text((start + end) / 2, lane + 0.1, label, ha="center", fontsize=7.5, style="italic", color="#424242")


DetailKey = str | tuple[str, ...]  # a key of `Result.details`, or a path into nested dicts


def detail(result: Result, key: DetailKey) -> Any:
    value: Any = result.details
    for part in (key,) if isinstance(key, str) else key:
        value = value[part]
    return value


def series_picture(
    results: Sequence[Result], key: DetailKey, title: str, xlabel: str, ylabel: str
) -> Picture:
    """A line per result from the list `detail(result, key)` (index 1, 2, ... on x)."""
    figure = Figure(figsize=(7, 3.6))
    ax = figure.add_subplot()
    for result in results:
        values = list(detail(result, key))
        ax.plot(range(1, len(values) + 1), values, "o-", color=colour(result.variant), label=result.variant)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title, fontsize=11, loc="left")
    ax.legend()
    ax.grid(alpha=0.3)
    return Picture(figure)


def counts_picture(
    results: Sequence[Result],
    bars: Mapping[DetailKey, tuple[str, float]],
    title: str,
    ylabel: str = "count",
) -> Picture:
    """Grouped bars of numeric details: `bars` maps a details key (or path) to (label, should
    be). The dotted line over each group is what a correct run gives; each bar shows its value."""
    figure = Figure(figsize=(7.5, 3.8))
    ax = figure.add_subplot()
    width = 0.8 / max(len(results), 1)
    top = 0.0
    for index, result in enumerate(results):
        xs = [i + index * width for i in range(len(bars))]
        heights = [float(detail(result, key)) for key in bars]
        top = max(top, *heights)
        drawn = ax.bar(xs, heights, width, color=colour(result.variant), label=result.variant)
        ax.bar_label(drawn, [f"{h:g}" for h in heights], fontsize=8, color=colour(result.variant))
    centre = (len(results) - 1) * width / 2
    ax.set_xticks(
        [i + centre for i in range(len(bars))],
        [f"{label}\n(should be {should:g})" for label, should in bars.values()],
    )
    for i, (_, should) in enumerate(bars.values()):
        ax.hlines(should, i - width / 2, i + 2 * centre + width / 2, **SHOULD_BE)
    top = max(top, *(should for _, should in bars.values()))
    # below 0 a little, so that a "should be 0" line is not hidden by the axis
    ax.set_ylim(-(top * 0.04 + 0.08), top * 1.25 + 0.5)
    ax.set_ylabel(ylabel)
    ax.hlines([], 0, 0, label="should be", **SHOULD_BE)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title, fontsize=11, loc="left")
    ax.legend(fontsize=8, loc="upper right")
    return Picture(figure)


def outcome_picture(
    results: Sequence[Result],
    title: str,
    caption: Callable[[Event], str] | None = None,
    outcomes: tuple[str, str] = ("Success", "Failed"),
    xlabel: str = "request, in order",
) -> Picture:
    """One lane per result: a marker per request outcome (`OUTCOMES`: not a variant colour),
    a dashed line per other event (e.g. a restart) between the requests it separates, and an
    optional caption under each marker. Requests are numbered 1, 2, ... in order."""
    good, bad = outcomes
    figure = Figure(figsize=(10.5, 1.1 * len(results) + 1.5))
    ax = figure.add_subplot()
    times = sorted({e.t for r in results for e in r.timeline if e.what in outcomes})
    slot = {t: n for n, t in enumerate(times)}  # request k sits at x = k - 1, gaps closed

    def x_of(t: float) -> float:  # an event between two requests sits half-way between them
        before = [slot[u] for u in times if u <= t]
        return slot[t] if t in slot else (before[-1] + 0.5 if before else -0.5)

    for lane, result in enumerate(results):
        for event in result.timeline:
            if event.what in outcomes:
                marker, tint = OUTCOMES.get(event.what, OUTCOMES[good if event.what == good else bad])
                ax.plot(x_of(event.t), lane, marker, color=tint, markersize=12)
                if caption is not None:
                    ax.text(x_of(event.t), lane - 0.3, caption(event), ha="center", fontsize=7)
            elif lane == 0:
                ax.axvline(x_of(event.t), **EVENT_LINE)
                box = {"boxstyle": "round", "fc": "white", "ec": "none"}
                label = f"{event.what}\n{event.detail}"
                ax.text(x_of(event.t), len(results) - 0.45, label, ha="center", fontsize=7.5, bbox=box)
    for outcome in outcomes:
        marker, tint = OUTCOMES.get(outcome, OUTCOMES[good if outcome == good else bad])
        ax.plot([], [], marker, color=tint, label=outcome)
    ax.set_xticks(range(len(times)), [str(n + 1) for n in range(len(times))])
    ax.set_xlim(-0.9, len(times) - 0.1)  # room for the captions of the first and last request
    ax.set_yticks(range(len(results)), [f"{r.variant}: {r.verdict}" for r in results])
    ax.set_ylim(-0.7, len(results) + 0.1)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=11, loc="left")
    ax.legend(loc="upper left", fontsize=8)
    return Picture(figure)


# -- repeated runs, per variant (benchmark repetitions) -----------------------------
@dataclass(frozen=True)
class RunsPanel:
    """One panel of `runs_picture`: a value per run for each variant (None: never got there)."""

    title: str
    ylabel: str
    values: Mapping[str, Sequence[float | None]]
    should_be: float | None = None
    should_label: str = ""
    log: bool = False


def runs_picture(grid: Sequence[Sequence[RunsPanel]], title: str) -> Picture:
    """A grid of panels. In each, one column per variant: a dot per run in the variant's
    colour, the median written beside them, the runs that never got there counted at the top,
    and the dotted "should be" line, labelled."""
    rows, cols = len(grid), max(len(row) for row in grid)
    figure = Figure(figsize=(5.2 * cols, 2.9 * rows + 0.6))
    figure.suptitle(title, fontsize=11, x=0.01, ha="left")
    for r, row in enumerate(grid):
        for c, panel in enumerate(row):
            _runs_panel(figure.add_subplot(rows, cols, r * cols + c + 1), panel)
    figure.tight_layout()
    return Picture(figure)


def _runs_panel(ax: Axes, panel: RunsPanel) -> None:
    names = list(panel.values)
    seen_all = [v for vs in panel.values.values() for v in vs if v is not None]
    extra = [panel.should_be] if panel.should_be is not None else []
    positive = [v for v in [*seen_all, *extra] if v > 0]
    low = min(positive, default=1.0) / 3 if panel.log else 0.0
    high = max([*seen_all, *extra, 1.0]) * (6 if panel.log else 1.35)
    for x, name in enumerate(names):
        values = list(panel.values[name])
        seen = [v for v in values if v is not None]
        spread = [x + 0.06 * (k - (len(seen) - 1) / 2) for k in range(len(seen))]
        shown = [max(v, low) for v in seen] if panel.log else seen
        ax.plot(spread, shown, "o", color=colour(name), markersize=5, alpha=0.85)
        if seen:
            median = statistics.median(seen)
            ax.text(x + 0.2, max(median, low) if panel.log else median, f"median {median:.3g}", fontsize=8,
                    color=colour(name), va="center")  # fmt: skip
        never = len(values) - len(seen)
        if never:
            ax.text(x, high / (2 if panel.log else 1.1), f"never in\n{never} of {len(values)}", fontsize=8,
                    color=colour(name), ha="center", va="top")  # fmt: skip
    if panel.should_be is not None:
        ax.hlines(panel.should_be, -0.5, len(names) - 0.5, label=panel.should_label, **SHOULD_BE)
        ax.legend(loc="upper right", fontsize=7)
    if panel.log:
        ax.set_yscale("log")
    ax.set_ylim(low if panel.log else -0.05 * high, high)
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel(panel.ylabel, fontsize=8)
    ax.set_title(panel.title, fontsize=9, loc="left")
