"""A run's timeline as an SVG picture: one lane per host, requests as bars, faults shaded.

`svg(history, title)` returns the picture as text (no plotting library needed): time
runs left to right in real seconds since the history began, with a tick axis from
just before the first operation or fault (the set-up before it is left out); each lane is a host; each
operation a bar from its invoke to its completion, green ok, red fail, grey info, black
lost (never completed), labelled with its value where it is wide enough; operations that
overlap in time get rows of their own in the lane. Each fault is a shaded band over the
lanes of the hosts it hit, from its start to its heal, and a line under the lanes with its
name and times. The title wraps; every label stays inside the 900 px frame.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from html import escape

from reference.netns.history import History, Op

COLOURS = {"ok": "#2e7d32", "fail": "#c62828", "info": "#9e9e9e", "invoke": "#000000"}
NAMES = {"ok": "ok", "fail": "fail", "info": "info", "invoke": "lost"}
FAULT = "#ffb300"
WIDTH, LEFT, RIGHT = 900, 110, 20
ROW, PAD, LINE = 18, 8, 15  # a bar row, a lane's padding, a text line
MIN_BAR = 3.0  # px: the narrowest bar
CHAR = 6.2  # average width of one 11 px sans-serif character
TITLE_CHARS = int((WIDTH - 20) / CHAR)
Scale = Callable[[float], float]  # seconds -> x


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str, extra: str = "") -> str:
    box = f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'
    return f'<rect {box} fill="{fill}"{extra}><title>{escape(tip)}</title></rect>'


def _text(x: float, y: float, text: str, fill: str = "#000", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" fill="{fill}"{extra}>{escape(text)}</text>'


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}"/>'


def _fit(text: str, width: float) -> str:
    """`text` cut (with an ellipsis) to about `width` pixels."""
    most = max(1, int(width / CHAR))
    return text if len(text) <= most else text[: most - 1] + "…"


def _rows(ops: list[Op], x: Scale, end: float) -> dict[int, int]:
    """Op index -> row within its lane: an op goes on the first row whose last bar ends
    where its own bar begins or before (a bar is at least MIN_BAR px wide), so bars never
    hide each other, not even those of quick requests one after the other."""
    row_of: dict[int, int] = {}
    free_at: dict[str, list[float]] = {}
    for op in sorted(ops, key=lambda o: o.invoked):
        rows = free_at.setdefault(op.process, [])
        left, right = _extent(op, x, end)
        row = next((i for i, edge in enumerate(rows) if edge <= left + 0.5), len(rows))  # may touch
        rows[row : row + 1] = [right]
        row_of[op.index] = row
    return row_of


def _extent(op: Op, x: Scale, end: float) -> tuple[float, float]:
    done = op.completed if op.completed is not None else end
    return x(op.invoked), x(op.invoked) + max(MIN_BAR, x(done) - x(op.invoked))


def _step(end: float) -> float:
    """A tick step of 1, 2 or 5 x 10^k giving at most 10 ticks over [0, end]."""
    raw = end / 10
    base = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * base for m in (1, 2, 5, 10) if m * base >= raw)


def svg(history: History, title: str) -> str:
    hosts = [*(op.process for op in history.ops), *(h for f in history.faults for h in f.hosts)]
    lanes = list(dict.fromkeys(hosts))
    end = max([history.now(), *(op.completed or 0 for op in history.ops)]) or 1.0
    first = min([*(op.invoked for op in history.ops), *(f.started for f in history.faults)], default=0.0)
    start = _step(end - first) * math.floor(first / _step(end - first))  # the set-up before it is not drawn
    end = max(end, start + 1e-3)

    def x(t: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (t - start) / (end - start)

    row_of = _rows(history.ops, x, end)
    title_lines = textwrap.wrap(title, TITLE_CHARS)[:3] or [""]
    if len(textwrap.wrap(title, TITLE_CHARS)) > 3:
        title_lines[-1] = _fit(title_lines[-1] + " …", WIDTH - 20)
    top: float = 10 + LINE * len(title_lines) + 8
    y: dict[str, float] = {}
    heights: dict[str, float] = {}
    for lane in lanes:
        rows = 1 + max((row_of[op.index] for op in history.ops if op.process == lane), default=0)
        y[lane], heights[lane] = top, rows * ROW + 2 * PAD
        top += heights[lane]
    axis = top + 4
    faults_top = axis + 26
    height = faults_top + LINE * len(history.faults) + 28
    size = f'width="{WIDTH}" height="{height:.0f}" font-family="sans-serif" font-size="11"'
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" {size}>',
        f'<rect width="{WIDTH}" height="{height:.0f}" fill="#fff"/>',
    ]
    out += [_text(10, 10 + LINE * (i + 1) - 3, line) for i, line in enumerate(title_lines)]
    out += _faults(history, x, y, heights, end, faults_top)
    for lane, lane_top in y.items():
        out.append(_text(10, lane_top + heights[lane] / 2 + 4, _fit(lane, LEFT - 16)))
        bottom = lane_top + heights[lane]
        out.append(_line(LEFT, bottom, WIDTH - RIGHT, bottom, "#ddd"))
    out += _bars(history, x, y, row_of, end)
    out += _axis(x, start, end, axis)
    out += _legend(height - 8)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _faults(
    history: History, x: Scale, y: dict[str, float], heights: dict[str, float], end: float, faults_top: float
) -> list[str]:
    out = []
    for i, fault in enumerate(history.faults):
        healed = fault.healed if fault.healed is not None else end
        width = max(1.0, x(healed) - x(fault.started))
        tip = f"{fault.name}: {fault.started:.2f} to {healed:.2f} s {fault.detail}".strip()
        for host in fault.hosts:
            out.append(_rect(x(fault.started), y[host] + 1, width, heights[host] - 2, FAULT, tip,
                             ' fill-opacity="0.3" class="fault"'))  # fmt: skip
        until = f"{fault.healed:.2f} s" if fault.healed is not None else "the end (never healed)"
        label = _fit(f"{fault.name}: {fault.started:.2f} s to {until}", WIDTH - LEFT - RIGHT)
        at = min(x(fault.started), WIDTH - RIGHT - CHAR * len(label))
        out.append(_text(max(LEFT, at), faults_top + LINE * i, label, "#e65100"))
    return out


def _bars(history: History, x: Scale, y: dict[str, float], row_of: dict[int, int], end: float) -> list[str]:
    out = []
    for op in history.ops:
        tip = f"{op.f} {op.value}: {NAMES[op.type]} {op.why}".strip()
        left, right = _extent(op, x, end)
        width = right - left - 1  # a 1 px gap between bars that touch
        top = y[op.process] + PAD + row_of[op.index] * ROW + 2
        out.append(_rect(left, top, width, ROW - 4, COLOURS[op.type], tip, f' class="op {NAMES[op.type]}"'))
        label = str(op.value)
        if CHAR * len(label) + 6 <= width:
            out.append(_text(left + 3, top + ROW - 8, label, "#fff", ' font-size="10"'))
    return out


def _axis(x: Scale, start: float, end: float, at: float) -> list[str]:
    out = [_line(LEFT, at, WIDTH - RIGHT, at, "#666")]
    step = _step(end - start)
    ticks = [start + i * step for i in range(int((end - start) / step + 1e-9) + 1)]
    for tick in ticks:
        label = f"{tick:g} s"
        anchor = "end" if x(tick) + CHAR * len(label) / 2 > WIDTH - 2 else "middle"
        out.append(_line(x(tick), at, x(tick), at + 4, "#666"))
        out.append(_text(max(LEFT, x(tick)), at + 16, label, "#333", f' text-anchor="{anchor}"'))
    out.append(_text(10, at + 16, "real seconds", "#333"))
    return out


def _legend(at: float) -> list[str]:
    out, left = [], 10.0
    for kind, name in [*((k, NAMES[k]) for k in COLOURS), ("fault", "fault active")]:
        fill = FAULT if kind == "fault" else COLOURS[kind]
        opacity = ' fill-opacity="0.3"' if kind == "fault" else ""
        out.append(f'<rect x="{left:.1f}" y="{at - 9:.1f}" width="10" height="10" fill="{fill}"{opacity}/>')
        out.append(_text(left + 14, at, name, "#333"))
        left += 14 + CHAR * len(name) + 16
    return out


def text(history: History, title: str) -> str:
    """The same timeline as lines of text: each operation and each fault, in time order."""
    rows = [(op.invoked, _op_line(op)) for op in history.ops]
    rows += [
        (f.started, f"{' '.join(f.hosts):10} fault {f.name}: {_span(f.started, f.healed)}")
        for f in history.faults
    ]
    lines = textwrap.wrap(title, 110) + [_fit(row, 118 * CHAR) for _, row in sorted(rows, key=lambda r: r[0])]
    return "\n".join(lines)


def _op_line(op: Op) -> str:
    line = f"{op.process:10} {op.f} {op.value}: {NAMES[op.type]:4} {_span(op.invoked, op.completed)}"
    return f"{line}  {op.why}" if op.why else line


def _span(start: float, end: float | None) -> str:
    return f"{start:.2f} s to " + (f"{end:.2f} s" if end is not None else "never")


class Picture:
    """A run's timeline: drawn (SVG) where Jupyter shows it, its text elsewhere (`print`)."""

    def __init__(self, history: History, title: str) -> None:
        self.history, self.title = history, title

    def _repr_svg_(self) -> str:
        return svg(self.history, self.title)

    def __str__(self) -> str:
        return text(self.history, self.title)

    __repr__ = __str__
