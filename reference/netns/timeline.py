"""A run's timeline as an SVG picture: one lane per host, requests as bars, faults shaded.

`svg(history, title)` returns the picture as text (no plotting library needed): time
runs left to right in real seconds; each lane is a host; each operation a bar from its
invoke to its completion, green ok, red fail, grey info, black lost; each fault a
shaded band over the lanes of the hosts it hit, from its start to its heal, labelled.
"""

from __future__ import annotations

from html import escape

from reference.netns.history import History

COLOURS = {"ok": "#2e7d32", "fail": "#c62828", "info": "#9e9e9e", "invoke": "#000000"}
WIDTH, LANE, LEFT, TOP = 900, 40, 110, 40


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str, extra: str = "") -> str:
    box = f'x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'
    return f'<rect {box} fill="{fill}"{extra}><title>{escape(tip)}</title></rect>'


def _text(x: float, y: float, text: str, fill: str = "#000") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" fill="{fill}">{escape(text)}</text>'


def svg(history: History, title: str) -> str:
    hosts = [*(op.process for op in history.ops), *(h for f in history.faults for h in f.hosts)]
    lanes = list(dict.fromkeys(hosts))
    end = max([history.now(), *(op.completed or 0 for op in history.ops)]) or 1.0
    x = lambda t: LEFT + (WIDTH - LEFT - 20) * t / end  # noqa: E731
    y = {lane: TOP + i * LANE for i, lane in enumerate(lanes)}
    height = TOP + LANE * len(lanes) + 40
    size = f'width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11"'
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" {size}>', _text(10, 20, title)]
    for fault in history.faults:
        healed = fault.healed if fault.healed is not None else end
        width = max(1.0, x(healed) - x(fault.started))
        for host in fault.hosts:
            out.append(_rect(x(fault.started), y[host] - 4, width, LANE - 8, "#ffb300", fault.name,
                             ' fill-opacity="0.3"'))  # fmt: skip
        out.append(_text(x(fault.started), height - 22, fault.name, "#e65100"))
    for lane, top in y.items():
        out.append(_text(10, top + LANE / 2, lane))
        out.append(
            f'<line x1="{LEFT}" y1="{top + LANE - 4}" x2="{WIDTH - 20}" y2="{top + LANE - 4}" stroke="#ddd"/>'
        )
    for op in history.ops:
        done = op.completed if op.completed is not None else end
        tip = f"{op.f} {op.value}: {op.type} {op.why}".strip()
        width = max(2.0, x(done) - x(op.invoked))
        out.append(_rect(x(op.invoked), y[op.process] + 6, width, LANE - 20, COLOURS[op.type], tip))
    out += [_text(LEFT, height - 6, "0 s"), _text(WIDTH - 60, height - 6, f"{end:.2f} s"), "</svg>"]
    return "\n".join(out) + "\n"
