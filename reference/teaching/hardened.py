"""Notebook `06_hardened`: what upstream's four fixes leave open, and the hardened form.

Five residual lessons (`reference.variants.RESIDUAL_LESSON_IDS`) each show a hole that
`reference/fixed` (upstream's fixes) leaves open and `reference/hardened` closes. This
module gives the notebook what it shows beside the lessons' own runs:

- `harden_diff(lesson)`: the `reference/fixed` -> `reference/hardened` changes tagged
  `HARDEN(<lesson>)`, read from the files now. One hunk of `diff -u` can hold several
  lessons' methods (the manager's hardening is one long insertion), so each run of added
  lines is cut where a new definition or tagged comment block starts, and every piece
  goes to the lessons its tags name;
- `status_rules()`: the real managers of the three forms under three late writes;
  `steps(results)`: a scenario's timeline as text, each form's detail per step;
- the restart-recovery benchmark (`benchmarks/results/recovery.json`, loaded at call
  time, so a new run shows without editing anything): `recovery_table`, `recovery_picture`
  (`plots.runs_picture`, imported only then: it needs matplotlib) and the hardened targets
  of `summary.json`;
- `upstream_change(...)`: one upstream method in two sglang wheels, as a diff, read in
  place from `.cache/sglang/` (or `$SGLANG_WHEELS`); without the wheels, one line says
  how to fetch them;
- the coding exercise: `variant_from` and `check_fix` with `reference.fixed` as the
  fallback (the learner hardens the fixed form), over `exercises.check_fix`.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import os
import re
import statistics
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import reference.buggy
import reference.fixed
import reference.hardened
from reference.harness.result import Result
from reference.status import KVPoll
from reference.teaching import bench, exercises, runs
from reference.teaching.diffs import _html_row
from reference.transport.mock import MockNetwork
from reference.variants import RESIDUAL_LESSON_IDS

if TYPE_CHECKING:
    from reference.teaching.plots import Picture

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
TAG = re.compile(r"# HARDEN\(([a-z-]+)\)")
VARIANTS = ("buggy", "fixed", "hardened")
FILES = ("bootstrap_server.py", "dispatcher.py", "manager.py", "receiver.py")
# Where a run of added lines is cut: a definition, a decorator, or a tagged comment block.
CUT = re.compile(r"^\s*(def |async def |class |@|# HARDEN\()")


# -- the hardened diff -------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """One cut of the fixed -> hardened diff: a `@@` header, then " ", "-", "+" lines."""

    file: str
    lines: tuple[str, ...]
    lessons: frozenset[str]

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(line for line in self.lines[1:] if line[:1] in "+-")


@dataclass(frozen=True)
class HardenDiff:
    """The pieces of one lesson; prints as `diff -u`, shows coloured in Jupyter."""

    lesson: str
    pieces: tuple[Piece, ...]

    def text(self) -> str:
        out: list[str] = []
        for name in sorted({p.file for p in self.pieces}):
            out += [f"--- reference/fixed/{name}", f"+++ reference/hardened/{name}"]
            out += [line for piece in self.pieces if piece.file == name for line in piece.lines]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(_html_row(line) for line in self.text().splitlines())  # the diffs' own tints
        return f'<pre style="font-size:12px;line-height:1.35">{rows}</pre>'


def _cuts(added: Sequence[str]) -> list[tuple[int, int]]:
    """Where a run of added lines splits: at each definition or tagged comment block that
    does not continue a comment block or decorator right above it."""
    starts = [0]
    for k in range(1, len(added)):
        above = added[k - 1].strip()
        if CUT.match(added[k]) and not above.startswith(("#", "@")):
            starts.append(k)
    if len(starts) > 1 and not any(line.strip() for line in added[: starts[1]]):
        starts.pop(1)  # blank lines alone open the run: they go with the first definition
    return list(zip(starts, [*starts[1:], len(added)], strict=True))


def _share(equal: tuple[str, int, int, int, int], context: int, between: bool, first: bool) -> int:
    """Context lines a change takes from a neighbouring equal run: up to `context`; a run
    `between` two changes and shorter than both contexts is split between them (the change
    before it takes the `first` half), so that no line is shown twice."""
    op, i1, i2, _, _ = equal
    if op != "equal":
        return 0
    length = i2 - i1
    if length >= 2 * context or not between:
        return min(context, length)
    return length // 2 if first else length - length // 2


def _header(old_start: int, old_len: int, new_start: int, new_len: int) -> str:
    return f"@@ -{old_start + (old_len > 0)},{old_len} +{new_start + (new_len > 0)},{new_len} @@"


def file_pieces(name: str, root: Path = PACKAGE, context: int = 3) -> list[Piece]:
    """Every changed region of `name` between `fixed/` and `hardened/`, cut into pieces."""
    old = (root / "fixed" / name).read_text().splitlines()
    new = (root / "hardened" / name).read_text().splitlines()
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    pieces: list[Piece] = []
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            continue
        before = _share(ops[n - 1], context, between=n > 1, first=False) if n else 0
        after = _share(ops[n + 1], context, between=n + 2 < len(ops), first=True) if n + 1 < len(ops) else 0
        cuts = _cuts(new[j1:j2]) if j2 > j1 else [(0, 0)]
        for c, (a, b) in enumerate(cuts):
            first, last = c == 0, c == len(cuts) - 1
            head = [f" {line}" for line in old[i1 - before : i1]] if first else []
            gone = [f"-{line}" for line in old[i1:i2]] if first else []
            tail = [f" {line}" for line in old[i2 : i2 + after]] if last else []
            body = [*head, *gone, *(f"+{line}" for line in new[j1 + a : j1 + b]), *tail]
            old_start = i1 - len(head) if first else i2
            old_len = len(head) + len(gone) + len(tail)
            header = _header(old_start, old_len, j1 + a - len(head), len(head) + (b - a) + len(tail))
            tags = frozenset(m.group(1) for line in body if line[:1] in "+-" for m in TAG.finditer(line))
            pieces.append(Piece(name, (header, *body), tags))
    return pieces


def harden_diff(lesson: str, root: Path = PACKAGE, context: int = 3) -> HardenDiff:
    """The pieces of `reference/fixed` -> `reference/hardened` tagged `HARDEN(lesson)`."""
    pieces = [p for name in FILES for p in file_pieces(name, root, context) if lesson in p.lessons]
    if not pieces:
        raise ValueError(f"no change of reference/fixed -> reference/hardened is tagged {lesson!r}")
    return HardenDiff(lesson, tuple(pieces))


# -- the lessons, live ---------------------------------------------------------------
def status_rules() -> str:
    """Three late writes, made on the real `KVManager` of each form (room 7, mock transport):
    a Failed for a cleared room, a transfer status for a cleared room, and a slower write
    after a Failed. Each row says what `request_status` holds for room 7 afterwards."""
    forms = {"buggy": reference.buggy, "fixed": reference.fixed, "hardened": reference.hardened}
    probes = {
        "late Failed, room absent": [KVPoll.Failed],
        "late Success, room absent": [KVPoll.Success],
        "Bootstrapping, Failed, then Transferring": [
            KVPoll.Bootstrapping,
            KVPoll.Failed,
            KVPoll.Transferring,
        ],
    }
    rows: list[tuple[str, ...]] = [("writes to room 7", *forms)]
    for label, writes in probes.items():
        cells = []
        for form in forms.values():
            manager = form.KVManager(MockNetwork())
            for status in writes:
                manager.update_status(7, status)
            held = manager.request_status.get(7)
            cells.append("absent" if held is None else KVPoll(held).name)
        rows.append((label, *cells))
    return _table(rows)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def verdict_grid(lessons: Sequence[str] = RESIDUAL_LESSON_IDS) -> str:
    """Every residual lesson on the three shipped forms (mock transport): one row each."""
    rows: list[tuple[str, ...]] = [("lesson", *VARIANTS)]
    for lesson in lessons:
        rows.append((lesson, *(runs.run(lesson, variant).verdict for variant in VARIANTS)))
    return _table(rows)


def details_table(results: Sequence[Result], keys: Sequence[str]) -> str:
    """Chosen details of each result, one row per key, one column per variant."""
    rows = [("", *(r.variant for r in results))]
    rows += [(key, *(str(r.details.get(key)) for r in results)) for key in keys]
    return _table(rows)


def steps(results: Sequence[Result]) -> str:
    """The scenario's timeline as text, step by step: what each form saw at each step. For
    a scenario whose forms go through the same steps (ValueError otherwise); a detail all
    forms share is printed once."""
    shapes = {r.variant: [(e.t, e.what) for e in r.timeline] for r in results}
    if len({tuple(shape) for shape in shapes.values()}) > 1:
        raise ValueError(f"the forms' timelines have different steps: {shapes}")
    lines: list[str] = []
    for index, event in enumerate(results[0].timeline):
        lines.append(f"t={event.t:g}  {event.what}")
        seen = {r.variant: r.timeline[index].detail for r in results}
        if len(set(seen.values())) == 1:
            lines.append(f"    all forms: {event.detail}")
            continue
        width = max(map(len, seen))
        lines += [f"    {name + ':':<{width + 1}} {detail}" for name, detail in seen.items()]
    return "\n".join(lines)


# -- the restart-recovery benchmark ------------------------------------------------------
Run = Mapping[str, Any]


def _ms(value: Any) -> float | None:
    return float(value) * 1e3 if isinstance(value, int | float) else None


def _sweeps(recovery: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Sequence[Run]]]]:
    from benchmarks.recovery_metrics import sweep_label

    return [
        (sweep_label(sweep), {name: result["runs"] for name, result in sweep["variants"].items()})
        for sweep in recovery["sweeps"]
    ]


def _per_run(values: Sequence[float | None], digits: int = 0) -> str:
    return " ".join(f"{v:.{digits}f}" if v is not None else "never" for v in values)


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def recovery_setup(recovery: Mapping[str, Any]) -> str:
    """How the run was set up, from its own `config` (a later run may differ)."""
    c = recovery.get("config", {})
    parts = [
        f"{c.get('receivers', '?')} decode ranks at {c.get('rate_per_receiver', '?')} requests/s each",
        f"prefill TP {c.get('prefill_tp_size', '?')}",
        f"killed and restarted {c.get('before_s', '?')} s in",
        f"horizon {c.get('horizon_s', '?')} s",
        f"{c.get('repetitions', '?')} repetitions per form and socket setting",
        f"waiting timeout {c.get('waiting_timeout', c.get('waiting_timeout_s', '?'))}",
        f"heartbeat {c.get('heartbeat', '?')}",
    ]
    return f"{recovery.get('mode', '?')} run: " + "; ".join(parts)


def miss_setup_ms(overhead: Mapping[str, Any]) -> dict[str, float]:
    """One receiver set-up on a cache miss over loopback (route fetch, registration,
    metadata), median per form in milliseconds, from the same run's overhead benchmark."""
    pair = next((p for p in overhead["pairs"] if p["case"].startswith("receiver set-up on a miss")), None)
    if pair is None:
        return {}
    return {v: round(pair[v]["ns_per_op"] / 1e6, 1) for v in VARIANTS if isinstance(pair.get(v), dict)}


def recovery_table(recovery: Mapping[str, Any]) -> str:
    """Per socket setting and variant, one value per repetition: when the new prefill had
    registered (seconds after the kill), requests that failed on the old process's ports,
    requests sent after the registration that failed, and when the first success came after
    the registration (milliseconds, in the header only: the notebook renderer blanks "N ms",
    which is right for live durations, not for these committed ones)."""
    rows = [
        (
            "sockets",
            "variant",
            "registered, s",
            "stale failures",
            "failed after it",
            "first success after it, ms",
        )
    ]
    for label, variants in _sweeps(recovery):
        for name, reps in variants.items():
            rows.append(
                (
                    label,
                    name,
                    _per_run([_seconds(r.get("registered_after_s")) for r in reps], digits=1),
                    _per_run([r["stale_failures"] for r in reps]),
                    _per_run([r["failed_after_registered"] for r in reps]),
                    _per_run([_ms(r["first_success_after_registered_s"]) for r in reps]),
                )
            )
    return _table(rows)


def recovery_picture(recovery: Mapping[str, Any], target_ms: float = 10.0) -> Picture:
    """Rows: when the new prefill registered, stale failures, "no prefill" failures, first
    success after the registration; columns: socket settings; one dot per repetition in the
    variant's colour."""
    from reference.teaching.plots import RunsPanel, runs_picture  # matplotlib: only for a picture

    columns = _sweeps(recovery)
    metrics = (
        ("new prefill registered, after the kill", "seconds", "registered_after_s", None, ""),
        ("failed on the old ports", "stale failures per run", "stale_failures", 0.0, "should be 0"),
        ("failed while no prefill was registered", "failures per run", "failed_while_down", None, ""),
        (
            "first success after the registration",
            "ms (log scale)",
            "first_success_after_registered_s",
            target_ms,
            f"hardened target: {target_ms:g} ms",
        ),
    )
    grid = []
    for title, ylabel, key, should, should_label in metrics:
        timing = key == "first_success_after_registered_s"
        row = [
            RunsPanel(
                f"{title}\n{label}",
                ylabel,
                {
                    name: [_ms(r[key]) if timing else _seconds(r.get(key)) for r in reps]
                    for name, reps in variants.items()
                },
                should_be=should,
                should_label=should_label,
                log=timing,
            )
            for label, variants in columns
        ]
        grid.append(row)
    mode = recovery.get("mode", "?")
    return runs_picture(
        grid, f"Restart recovery, the committed benchmark run ({mode}): one dot per repetition"
    )


def hardened_targets(summary: Mapping[str, Any]) -> str:
    """The benchmark targets about the hardened form, as `summary.json` recorded them, with
    "N ms" written "N msec" (the notebook renderer blanks "N ms" as a live duration)."""
    chosen = {**summary, "targets": [t for t in summary["targets"] if t["id"].startswith("hardened")]}
    return re.sub(r"(\d+(?:\.\d+)?) ?ms\b", r"\1 msec", bench.targets(chosen))


def median_first_success_ms(recovery: Mapping[str, Any], variant: str) -> float | None:
    """The median first success after the registration of `variant`, in milliseconds, over the
    runs (every socket setting) that had one; None if none had."""
    values = [
        _ms(run["first_success_after_registered_s"])
        for _, variants in _sweeps(recovery)
        for run in variants.get(variant, ())
    ]
    seen = [v for v in values if v is not None]
    return round(statistics.median(seen), 1) if seen else None


# -- upstream, read from the wheels ----------------------------------------------------
PYPI = "https://pypi.org/project/sglang/"
FETCH = "bash ci/upstream.sh --fetch-only"
DISAGG = "sglang/srt/disaggregation/"


def wheel_dir() -> Path:
    return Path(os.environ.get("SGLANG_WHEELS", ROOT / ".cache" / "sglang"))


def _wheel(version: str) -> Path | None:
    found = sorted(wheel_dir().glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


@functools.lru_cache(maxsize=4)
def _texts(wheel: Path) -> dict[str, str]:
    """The package's `disaggregation` sources in `wheel`, by path."""
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith(DISAGG) and n.endswith(".py"))
        return {name: archive.read(name).decode("utf-8") for name in names}


@functools.lru_cache(maxsize=32)
def _tree(wheel: Path, name: str) -> ast.Module:
    return ast.parse(_texts(wheel)[name])


@functools.lru_cache(maxsize=64)
def _classes(wheel: Path, cls: str) -> dict[str, tuple[str, int, tuple[str, ...]]]:
    """`Class.method` -> (file, first line, source lines) for every method of the class named
    `cls` (the first file that defines it wins); only files whose text defines it are parsed."""
    found: dict[str, tuple[str, int, tuple[str, ...]]] = {}
    defines = re.compile(rf"^class {re.escape(cls)}\b", re.MULTILINE)
    for name, text in _texts(wheel).items():
        if not defines.search(text):
            continue
        lines = text.splitlines()
        for node in _tree(wheel, name).body:
            if not (isinstance(node, ast.ClassDef) and node.name == cls):
                continue
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    start = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
                    source = tuple(lines[start - 1 : fn.end_lineno])
                    found.setdefault(f"{cls}.{fn.name}", (name, start, source))
    return found


def _method(wheel: Path, method: str) -> tuple[str, int, tuple[str, ...]] | None:
    return _classes(wheel, method.split(".", 1)[0]).get(method)


@dataclass(frozen=True)
class UpstreamChange:
    lines: tuple[str, ...]

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__


def upstream_change(method: str, before: str = "0.5.19", after: str = "0.5.23") -> UpstreamChange:
    """`method` ("Class.method") in two sglang releases: its unified diff, or which one lacks it."""
    wheels = {version: _wheel(version) for version in (before, after)}
    missing = [version for version, path in wheels.items() if path is None]
    if missing:
        return UpstreamChange(
            (
                f"Reading upstream's {method} needs the sglang {' and '.join(missing)} wheel(s) "
                f"(fetch them with: {FETCH}); the releases: {PYPI}{before}/ and {PYPI}{after}/",
            )
        )
    found = {version: _method(path, method) for version, path in wheels.items() if path is not None}
    head = [f"{method}, sglang {before} ({PYPI}{before}/) -> {after} ({PYPI}{after}/)"]
    old, new = found[before], found[after]
    if old is None and new is None:
        return UpstreamChange((*head, f"absent from both releases' {DISAGG}"))
    if old is None or new is None:
        there, gone = (before, after) if new is None else (after, before)
        file, start, source = old or new  # type: ignore[misc]
        lines = [f"absent from sglang {gone}; in {there} at {file}:{start}:", *source]
        return UpstreamChange((*head, *lines))
    if old[2] == new[2]:
        return UpstreamChange((*head, f"unchanged; in {after} at {new[0]}:{new[1]}:", *new[2]))
    diff = difflib.unified_diff(old[2], new[2], f"{before}/{old[0]}", f"{after}/{new[0]}", lineterm="")
    return UpstreamChange((*head, *(_shift(line, old[1] - 1, new[1] - 1) for line in diff)))


def _shift(line: str, old: int, new: int) -> str:
    """A hunk header's line numbers moved from the method's to the file's."""
    found = re.match(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", line)
    if not found:
        return line
    a, b = int(found.group(1)) + old, int(found.group(3)) + new
    return f"@@ -{a}{found.group(2) or ''} +{b}{found.group(4) or ''} @@{line[found.end() :]}"


# -- the coding exercise ---------------------------------------------------------------
FALLBACK = reference.fixed


def variant_from(namespace: Mapping[str, object], name: str = "your hardening") -> ModuleType:
    """A variant module: the learner's component classes from `namespace`, and
    `reference.fixed`'s (upstream's fixes) for every component the learner did not write."""
    module = ModuleType(name)
    module.__doc__ = "A learner's hardening of reference.fixed, built from a notebook's exercise cell."
    for component in exercises.COMPONENTS:
        mine = namespace.get(component)
        module.__dict__[component] = mine if isinstance(mine, type) else getattr(FALLBACK, component)
    module.__all__ = list(exercises.COMPONENTS)  # type: ignore[attr-defined]
    return module


@dataclass(frozen=True)
class HardeningReport(exercises.FixReport):
    """`exercises.FixReport`, naming `reference.fixed` as what the learner did not write."""

    def __str__(self) -> str:
        return super().__str__().replace("(all of reference.buggy)", "(all of reference.fixed)")

    def __repr__(self) -> str:
        return str(self)


def check_fix(lesson: str, variant: ModuleType) -> HardeningReport:
    """`exercises.check_fix` (the lesson's full checklist, in-process) for a hardening of
    `reference.fixed`: the classes listed as the learner's are those that differ from fixed's."""
    report = exercises.check_fix(lesson, variant)
    written = tuple(c for c in exercises.COMPONENTS if getattr(variant, c) is not getattr(FALLBACK, c))
    return HardeningReport(**{**_fields(report), "written": written})


def _fields(report: exercises.FixReport) -> dict[str, Any]:
    return {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}


__all__ = [
    "RESIDUAL_LESSON_IDS",
    "VARIANTS",
    "HardenDiff",
    "check_fix",
    "details_table",
    "harden_diff",
    "hardened_targets",
    "median_first_success_ms",
    "miss_setup_ms",
    "recovery_picture",
    "recovery_setup",
    "recovery_table",
    "status_rules",
    "steps",
    "upstream_change",
    "variant_from",
    "verdict_grid",
]
