"""Mutation of upstream's own code: does `--sglang` see a change to the code it judges?

    python -m reference.upstream.mutate WHEEL [--out FILE] [--limit N]

For the methods the four pull requests touched and their direct callers (`TARGETS`),
this makes one source tree per mutant from the wheel (`trees.py`) and runs every lesson
with every check on it (`--sglang TREE --quick`). A mutant is *killed* when a lesson's or
check's verdict differs from the unmodified tree's (two runs of which must agree), as
`reference/mutate/runner.py` judges our own variants' mutants; `unknown` when the mutant
breaks the run.

Operators, on the AST of each target method (a mutant changes one node, written back
as text at that node's place; nodes spanning lines are left alone):
- the checker work's semantic ones: remove a lock (`with <...lock...>:` runs unlocked),
  `==`/`is` swapped, delete a statement (`pass` in its place), move a guard (an `if`
  test negated), weaken a reference (a held `create_task` result dropped, a `list(...)`
  snapshot replaced by the live object);
- mutmut's: comparison operators (`==`/`!=`, `<`/`<=`, `>`/`>=`, `in`/`not in`,
  `is`/`is not`), `and`/`or`, `True`/`False`, an integer constant + 1.

With `--explore-locks`, a survivor that removed a lock is judged again by the explorations
that contend it (`EXPLORED_WITH`), against the same explorations on the unmutated tree.

The report (Markdown) lists the kill rate and every survivor with its line, for the
survivors table of `reference/upstream/MUTATION.md` (`ci/upstream_mutation.sh`).
"""

from __future__ import annotations

import argparse
import ast
import copy
import shutil
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from reference.explore.runner import SETUP_BOUND, TIME_BOUND
from reference.mutate.runner import Verdicts, compare, only_bounds, run_impl, run_reference
from reference.upstream.survivors import block_of, body_of, classify
from reference.upstream.trees import DISAGG, make_tree

# (classes in the MRO the adapter runs, most derived first, method) -> the lesson that
# judges it: the first class that defines the method is the one mutated.
RECEIVER, MANAGER = ("MooncakeKVReceiver", "CommonKVReceiver"), ("MooncakeKVManager", "CommonKVManager")
TARGETS: dict[tuple[tuple[str, ...], str], str] = {
    (MANAGER, "update_status"): "failed-resurrect",  # #24539
    (RECEIVER, "abort"): "failed-resurrect",  # its caller
    (MANAGER, "_handle_node_failure"): "live-set-race",  # #36351
    (MANAGER, "_start_heartbeat_checker_thread"): "live-set-race",  # its caller
    (RECEIVER, "_setup_bootstrap_infos"): "stale-bootstrap",  # #36029
    (RECEIVER, "invalidate_cached_bootstrap_infos"): "stale-bootstrap",
    (RECEIVER, "_check_waiting_timeout"): "stale-bootstrap",
    (RECEIVER, "send_metadata"): "stale-bootstrap",
    (RECEIVER, "_register_kv_args"): "stale-bootstrap",
    (RECEIVER, "poll"): "stale-bootstrap",  # caller of _check_waiting_timeout
    (("CommonKVBootstrapServer",), "_run_server"): "task-refs",  # #33048
    (("DPDispatcher",), "start"): "task-refs",
}
_PAIRS = ((ast.Eq, ast.NotEq), (ast.Lt, ast.LtE), (ast.Gt, ast.GtE), (ast.In, ast.NotIn), (ast.Is, ast.IsNot))
_SWAP: dict[type, type] = {**dict(_PAIRS), **{b: a for a, b in _PAIRS}}


@dataclass(frozen=True)
class Mutant:
    file: str  # relative to sglang/srt/disaggregation/
    target: str  # Class.method
    line: int
    operator: str
    before: str  # the source line
    text: str  # the whole mutated file
    lesson: str


def _segment(lines: list[str], node: ast.AST) -> tuple[int, int, int] | None:
    start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if start is None or start != end:
        return None
    return start, node.col_offset, node.end_col_offset  # type: ignore[attr-defined, return-value]


def _splice(lines: list[str], where: tuple[int, int, int], text: str) -> str:
    line, col, end = where
    out = list(lines)
    raw = out[line - 1].encode()
    out[line - 1] = (raw[:col] + text.encode() + raw[end:]).decode()
    return "".join(out)


def _replace_lines(lines: list[str], node: ast.stmt, text: str) -> str:
    indent = lines[node.lineno - 1][: node.col_offset]
    end = node.end_lineno or node.lineno
    return "".join([*lines[: node.lineno - 1], f"{indent}{text}\n", *lines[end:]])


def _expression_mutants(lines: list[str], node: ast.AST) -> Iterator[tuple[str, str]]:
    where = _segment(lines, node)
    if where is None:
        return
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0])
        swaps = [(_SWAP[op], f"{op.__name__} -> {_SWAP[op].__name__}")] if op in _SWAP else []
        if op is ast.Eq:
            swaps.append((ast.Is, "== -> is"))
        if op is ast.Is:
            swaps.append((ast.Eq, "is -> =="))
        for new, name in swaps:
            mutated = copy.deepcopy(node)
            mutated.ops = [new()]
            yield name, _splice(lines, where, ast.unparse(mutated))
    elif isinstance(node, ast.BoolOp):
        boolop = copy.deepcopy(node)
        boolop.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "and <-> or", _splice(lines, where, ast.unparse(boolop))
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield "True <-> False", _splice(lines, where, repr(not node.value))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "int + 1", _splice(lines, where, repr(node.value + 1))
    elif (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "list"
        and len(node.args) == 1
    ):  # fmt: skip
        yield "weaken: list(x) -> x", _splice(lines, where, ast.unparse(node.args[0]))


def _statement_mutants(lines: list[str], node: ast.stmt) -> Iterator[tuple[str, str]]:
    header = lines[node.lineno - 1]
    if isinstance(node, ast.With) and "lock" in ast.unparse(node.items[0].context_expr).lower():
        indent = header[: node.col_offset]
        yield (
            "remove a lock",
            "".join([*lines[: node.lineno - 1], f"{indent}if True:\n", *lines[node.lineno :]]),
        )
        return
    if isinstance(node, ast.If) and node.test.lineno == node.lineno and node.test.end_lineno == node.lineno:
        test = _segment(lines, node.test)
        if test is not None:
            yield "move a guard: if not", _splice(lines, test, f"not ({ast.unparse(node.test)})")
        return
    if (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and "create_task" in ast.unparse(node.value)
    ):
        yield "weaken: drop the held task", _replace_lines(lines, node, ast.unparse(node.value))
    if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.Return, ast.Delete)):
        yield "delete a statement", _replace_lines(lines, node, "pass")


def mutants(text: str, file: str, cls: str, method: str, lesson: str) -> Iterator[Mutant]:
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for klass in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls):
        for function in klass.body:
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name == method:
                for node in ast.walk(function):
                    if node is function:
                        continue
                    found = (
                        _statement_mutants(lines, node) if isinstance(node, ast.stmt)
                        else _expression_mutants(lines, node)
                    )  # fmt: skip
                    for operator, mutated in found:
                        line = getattr(node, "lineno", 0)
                        before = lines[line - 1].strip()
                        yield Mutant(file, f"{cls}.{method}", line, operator, before, mutated, lesson)


def all_mutants(wheel: Path) -> list[Mutant]:
    found: list[Mutant] = []
    with zipfile.ZipFile(wheel) as archive:
        files = {n[len(DISAGG) :]: archive.read(n).decode() for n in archive.namelist()
                 if n.startswith(DISAGG) and n.endswith(".py")}  # fmt: skip
    for (classes, method), lesson in TARGETS.items():
        for cls in classes:
            defined = [(f, t) for f, t in sorted(files.items()) if _defines(t, cls, method)]
            if defined:
                file, text = defined[0]
                found += list(mutants(text, file, cls, method, lesson))
                break
    return found


def _defines(text: str, cls: str, method: str) -> bool:
    if f"class {cls}(" not in text and f"class {cls}:" not in text:
        return False
    for klass in (n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == cls):
        if any(
            isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == method for f in klass.body
        ):
            return True
    return False


SURVIVED = "survived"


# The story and the hand-built checks, as every mutant of the committed results was judged;
# the deep checks (the simulation, on upstream too) are left to a later stage of survivors.
JUDGED_WITH = ("--quick",)
# That stage (`--deep`): the default run of the survivor's own lesson, the simulation with
# it (the explorations do not run on upstream there: `--explore` is apart).
DEEP_WITH: tuple[str, ...] = ()
# ... and of the lessons whose simulation states what the survivor's method does besides:
# the failure handler drops and disconnects what stale-bootstrap caches, and `abort()` sends
# the notification the waiting timeout shares (stale-bootstrap's `dead-prefill-disconnected`,
# `abort-reaches-prefill`, `aborted-stays-failed`).
DEEP_ALSO: dict[str, tuple[str, ...]] = {
    "live-set-race": ("stale-bootstrap",),
    "failed-resurrect": ("stale-bootstrap",),
}


# The lock stage (`--explore-locks`): the default run scripts one interleaving (hooks), so
# a removed lock is never contended there. A survivor whose operator removed a lock is
# judged again by explorations (`--sglang TREE --explore`, frontrun DPOR) that run the
# locked section against its racing partner, compared with the same explorations on the
# unmutated tree: killed only where the mutant's verdict is `bug` and the unmutated
# tree's `ok`; an exploration that stops at its bound (`unknown`) kills nothing.
LOCK_OPERATORS = ("remove a lock",)
# The sections of `connection_lock` over the pool, each against its partner
# (`reference/explore/locked_sections.py`); the lesson properties that run whole requests
# stop at their 30 s bound on upstream and cannot kill (the unmutated tree is `unknown`).
_POOL_SECTIONS = (
    ("stale-bootstrap", "invalidation-vs-eviction"),
    ("stale-bootstrap", "fill-vs-eviction-walk"),
)
# Per mutant's lesson, (lesson, property) of the explorations that contend its locks:
# the failure handler's `connection_lock` also guards the pool, so live-set-race's
# mutants get the pool's sections too.
EXPLORED_WITH: dict[str, tuple[tuple[str, str], ...]] = {
    "live-set-race": (("live-set-race", "every-affected-room-failed"), *_POOL_SECTIONS),
    # and a receiver's `_lifecycle_lock` (0.5.23, `prefill_complete`): the recompute
    # callback's failure against the scheduler's poll
    "stale-bootstrap": (*_POOL_SECTIONS, ("stale-bootstrap", "recompute-failure-vs-poll")),
    "failed-resurrect": (("failed-resurrect", "late-failed-after-clear"),),
}
Explored = dict[str, tuple[str, str]]  # "lesson/property" -> (verdict, symptom)


class BaselineError(Exception):
    """The unmutated tree did not give the same verdicts twice."""


def _agreed(
    tree: Path, lessons: tuple[str, ...], timeout: float, extra: tuple[str, ...], what: str
) -> Verdicts:
    runs = [run_impl(tree, lessons, timeout, extra, flag="--sglang") for _ in range(2)]
    for status, _, note in runs:
        if status != "ran":
            raise BaselineError(f"unmutated {what}: {status} {note}")
    if runs[0][1] != runs[1][1]:
        diffs = compare(runs[0][1], runs[1][1])[1]
        raise BaselineError(f"unmutated {what}: verdicts differ between two runs: {diffs[:3]}")
    return runs[0][1]


def baseline(wheel: Path, root: Path, timeout: float) -> Verdicts:
    """Every lesson's and check's verdict on the unmutated tree, from two runs that must
    agree (a verdict that varied would pass for a kill)."""
    return _agreed(make_tree(wheel, root), (), timeout, JUDGED_WITH, wheel.name)


class DeepBaselines:
    """Per lessons, the unmutated tree's verdicts in the default run (two runs that agree),
    made the first time a survivor of those lessons needs them."""

    def __init__(self, wheel: Path, root: Path, timeout: float) -> None:
        self.tree, self.timeout = make_tree(wheel, root), timeout
        self.wheel, self.lock = wheel, threading.Lock()
        self.known: dict[tuple[str, ...], Verdicts] = {}

    def __call__(self, lessons: tuple[str, ...]) -> Verdicts:
        with self.lock:  # one baseline at a time: two jobs never make the same one twice
            if lessons not in self.known:
                what = f"{self.wheel.name} ({', '.join(lessons)}, default run)"
                self.known[lessons] = _agreed(self.tree, lessons, self.timeout, DEEP_WITH, what)
            return self.known[lessons]


def explore_run(tree: Path, pairs: tuple[tuple[str, str], ...], timeout: float) -> tuple[str, Explored, str]:
    """(status, findings, note) of one `--sglang TREE --explore` run of `pairs`
    ((lesson, property)): status `ran`, `timeout` or `error` (no findings came back).
    `timeout` is raised to what every exploration's own bounds allow, and a margin."""
    timeout = max(timeout, (TIME_BOUND + SETUP_BOUND) * len(pairs) + 30.0)
    cmd = ["--explore", "--sglang", str(tree), "--json"]
    for lesson in dict.fromkeys(lesson for lesson, _ in pairs):
        cmd += ["--lesson", lesson]
    for _, prop in pairs:
        cmd += ["--property", prop]
    status, payload, note = run_reference(cmd, timeout, key="explorations")
    if status != "ran":
        return status, {}, note
    findings = payload["explorations"]
    return "ran", {f"{f['lesson']}/{f['property']}": (f["verdict"], f["symptom"]) for f in findings}, ""


class ExploreBaselines:
    """Per lesson, the unmutated tree's verdicts in `EXPLORED_WITH[lesson]`, from two
    runs, made the first time a lock survivor needs them. An exploration whose verdict
    differs between the two (a search that reached its bound once under load) counts
    as `unknown`: it can kill nothing."""

    def __init__(self, wheel: Path, root: Path, timeout: float) -> None:
        self.tree, self.timeout = make_tree(wheel, root), timeout
        self.wheel, self.lock = wheel, threading.Lock()
        self.known: dict[str, Explored] = {}

    def __call__(self, lesson: str) -> Explored:
        with self.lock:
            if lesson not in self.known:
                runs = [explore_run(self.tree, EXPLORED_WITH[lesson], self.timeout) for _ in range(2)]
                what = f"unmutated {self.wheel.name} ({lesson}, explorations)"
                for status, _, note in runs:
                    if status != "ran":
                        raise BaselineError(f"{what}: {status} {note}")
                first, second = runs[0][1], runs[1][1]
                self.known[lesson] = {
                    key: found if second.get(key, ("absent", ""))[0] == found[0] else ("unknown", "varied")
                    for key, found in first.items()
                }
            return self.known[lesson]


def judge(
    wheel: Path,
    mutant: Mutant,
    root: Path,
    unmutated: Verdicts,
    timeout: float,
    deep: DeepBaselines | None = None,
    explored: ExploreBaselines | None = None,
) -> tuple[str, str]:
    """(outcome, what told it apart): every lesson with every check through `--sglang`
    on the mutant's tree, compared verdict by verdict with the unmutated tree's
    (`reference/mutate/runner.py`): `killed`, `unknown`, `timeout`, `import-error` or
    `survived`. With `deep`, a survivor is judged again by its lesson's default run; a
    difference there that is only a deep check hitting its time bound is no kill. With
    `explored`, a survivor that removed a lock is judged again by the explorations that
    contend it (`EXPLORED_WITH`)."""
    tree = make_tree(wheel, root)
    (tree / DISAGG / mutant.file).write_text(mutant.text, encoding="utf-8")
    try:
        status, verdicts, note = run_impl(tree, (), timeout, JUDGED_WITH, flag="--sglang")
        if status != "ran":
            return status, note
        outcome, diffs = compare(unmutated, verdicts)
        how = _told(diffs)
        if outcome == SURVIVED and deep is not None:
            outcome, how = _deeper(tree, mutant, deep, timeout)
        if (
            outcome == SURVIVED and explored is not None and mutant.operator in LOCK_OPERATORS
            and mutant.lesson in EXPLORED_WITH
        ):  # fmt: skip
            outcome, found = _explored(tree, mutant, explored, timeout)
            how = "; ".join(filter(None, (how, found)))
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return outcome, how


def _explored(tree: Path, mutant: Mutant, explored: ExploreBaselines, timeout: float) -> tuple[str, str]:
    """Killed where an exploration is `bug` on the mutant and `ok` on the unmutated tree;
    every other difference (a search that stopped at its bound: `unknown`) is no kill."""
    expected = explored(mutant.lesson)
    status, got, note = explore_run(tree, EXPLORED_WITH[mutant.lesson], timeout)
    if status != "ran":
        return SURVIVED, f"explorations did not run ({status}): {note}"
    kills = [
        f"explore {key}: ok -> bug ({got[key][1].split(' [after ')[0][:160]})"
        for key in sorted(got)
        if got[key][0] == "bug" and expected.get(key, ("absent", ""))[0] == "ok"
    ]
    if kills:
        return "killed", "; ".join(kills)
    undecided = [key for key in sorted(got) if got[key][0] != expected.get(key, ("absent", ""))[0]]
    held = [key for key in sorted(got) if got[key][0] == "ok"]
    parts = [f"explorations held: {', '.join(held)}" if held else ""]
    parts += [f"undecided (no kill): {', '.join(undecided)}" if undecided else ""]
    return SURVIVED, "; ".join(filter(None, parts))


def _deeper(tree: Path, mutant: Mutant, deep: DeepBaselines, timeout: float) -> tuple[str, str]:
    lessons = (mutant.lesson, *DEEP_ALSO.get(mutant.lesson, ()))
    expected = deep(lessons)
    status, verdicts, note = run_impl(tree, lessons, timeout, DEEP_WITH, flag="--sglang")
    if status != "ran":
        return status, f"default run: {note}"
    outcome, diffs = compare(expected, verdicts)
    if outcome == "unknown" and only_bounds(diffs, note):
        return SURVIVED, f"default run undecided (a time bound): {_told(diffs)}"
    if diffs and all(": unknown -> " in diff for diff in diffs):  # the unmutated tree's run undecided
        return SURVIVED, f"default run undecided (the unmutated tree's): {_told(diffs)}"
    return outcome, ("default run: " + _told(diffs)) if diffs else ""


def _told(diffs: list[str]) -> str:
    return "; ".join(diffs[:4]) + (f" (+{len(diffs) - 4})" if len(diffs) > 4 else "")


def _verdicts(log: list[str]) -> dict[int, str]:
    """index -> verdict from a run's log lines (`index/total verdict target op`)."""
    verdicts = {}
    for line in log:
        head = line.split(maxsplit=2)
        if len(head) == 3 and "/" in head[0] and head[0].split("/")[0].isdigit():
            verdicts[int(head[0].split("/")[0]) - 1] = head[1]
    return verdicts


def summarize(wheel: Path, log: list[str]) -> tuple[str, int, int, int]:
    """The Markdown of one release from a run's log (`index/total verdict target op`):
    the report, killed, non-equivalent judged, equivalent survivors."""
    found = all_mutants(wheel)
    verdicts = _verdicts(log)
    judged = [(found[i], v) for i, v in sorted(verdicts.items()) if i < len(found)]
    survivors = [
        (m, classify(m.operator, m.before, m.lesson, block_of(m.text, m.line), body_of(m.text, m.line)))
        for m, v in judged
        if v == SURVIVED
    ]
    equivalent = sum(why.startswith("equivalent") for _, why in survivors)
    killed = len(judged) - len(survivors)
    scored = len(judged) - equivalent
    release = wheel.name.split("-")[1]
    rate = 100 * killed / max(scored, 1)
    lines = [
        f"## sglang-{release}",
        "",
        f"{len(judged)} of {len(found)} mutants judged; {killed} killed, {len(survivors)} survived, of which "
        f"{equivalent} equivalent: **{killed} of {scored} non-equivalent mutants killed ({rate:.1f}%)**.",
        "",
        "| survivor | operator | line | lesson | why it lives |",
        "|---|---|---|---|---|",
        *(f"| {m.target} ({m.file}:{m.line}) | {m.operator} | `{m.before.replace('|', '/')[:70]}` "
          f"| {m.lesson} | {why} |" for m, why in survivors),
        "",
    ]  # fmt: skip
    return "\n".join(lines), killed, scored, equivalent


def _lines(log: list[str]) -> dict[int, str]:
    """index -> that mutant's line of a run's log."""
    return {i: line for line in log if (i := _index(line)) is not None}


def _index(line: str) -> int | None:
    head = line.split(maxsplit=1)[0] if line.strip() else ""
    number = head.split("/")[0]
    return int(number) - 1 if "/" in head and number.isdigit() else None


def _plan(args: argparse.Namespace, count: int) -> tuple[list[int], dict[int, str]]:
    """(the mutants to judge, the lines kept from --resume). --resume alone: judge its
    survivors (`ok`: the older lesson-level log's), keep its detected; --only alone:
    judge those; both: judge those, keep every other line of the log."""
    kept = _lines(args.resume.read_text().splitlines()) if args.resume else {}
    if args.only:
        todo = [i for i in range(count) if i + 1 in args.only]
        return todo, {i: line for i, line in kept.items() if i not in todo}
    verdicts = _verdicts(list(kept.values()))
    detected = {i: line for i, line in kept.items() if verdicts.get(i) not in (SURVIVED, "ok")}
    return [i for i in range(count) if i not in detected], detected


def _judge_all(args: argparse.Namespace, found: list[Mutant]) -> list[str]:
    """One log line per mutant (`index/total outcome target:line operator | differences`)."""
    todo, lines = _plan(args, len(found))
    with tempfile.TemporaryDirectory(prefix="sglang-mutants-") as scratch:
        unmutated = baseline(args.wheel, Path(scratch) / "unmutated", args.timeout)
        deep = (
            DeepBaselines(args.wheel, Path(scratch) / "unmutated-deep", args.timeout) if args.deep else None
        )
        explored = (
            ExploreBaselines(args.wheel, Path(scratch) / "unmutated-explored", args.timeout)
            if args.explore_locks
            else None
        )

        def one(index: int) -> None:
            mutant = found[index]
            outcome, how = judge(
                args.wheel, mutant, Path(scratch) / f"m{index}", unmutated, args.timeout, deep, explored
            )
            lines[index] = (
                f"{index + 1}/{len(found)} {outcome:12} {mutant.target}:{mutant.line} {mutant.operator}"
                + (f" | {how}" if how else "")
            )
            print(lines[index], file=sys.stderr, flush=True)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(one, todo))
    return [lines[i] for i in sorted(lines) if i < len(found)]


HEADER = """# Mutation of upstream's own code

Written by `bash ci/upstream_mutation.sh` (`python -m reference.upstream.mutate`; the raw
runs are `mutation/<release>.log`, one line per mutant with the verdicts that told it
apart). Each mutant changes one node of a method the four PRs touched or of a direct
caller (`TARGETS` in `mutate.py`: semantic operators — remove a lock, `==`/`is`, delete a
statement, move a guard, weaken a reference — and mutmut's comparison, boolean and
constant operators), in a source tree made from the release's wheel, and runs through
`--sglang TREE --quick` on every lesson with every check (the story and the hand-built
checks: the simulation, a deep check that runs on upstream since, would cost about a
minute per mutant, and a bound it hits under load would read as a kill). It is judged as
`reference/mutate/runner.py` judges our own variants' mutants: killed when any lesson's
or check's verdict differs from the unmodified tree's (two runs of which must agree),
`unknown`/`timeout`/`import-error` when the run could not decide (counted as detected,
as there), survived when every verdict is the same. Equivalent: a survivor no execution
can tell apart (why, per row: `survivors.py`); every other survivor is a gap, with the
check that would catch it. The hand-written revert of every PR hunk is a tree that must
be `bug` (`trees.REVERTS`, `tests/test_upstream_trees.py`).

How this was run (`--resume`): a log line whose outcome is a verdict (`bug`, `unknown`,
`bug(<lesson>)`) is a kill kept from the earlier lesson-level run, which counted a fix
lesson's verdict other than `ok`: a verdict that differs from the unmodified tree's, so
still a kill while the checks only grow (on the first 39 mutants of each release, re-run,
every such kill was killed again). Every other mutant was judged as above; every
non-equivalent survivor was judged (again, `--resume --only`) with every check there is now.
The latest re-judgment (`--resume`, JOBS=1) judged the committed survivors with every check
but the four added last (`send-after-failed-init`, `send-failure-stops-sends`,
`aborted-stays-failed`, `heartbeat-is-daemon`); every survivor then ran against each of
those four alone (`--check`), and the seven mutants one of them failed were judged again
with every check (`--resume --only`): all seven killed. The latest (`--resume --only` on every
non-equivalent survivor, `--deep`, JOBS=2, 2026-12-02 at `a4e9af8`, load average 1 to 2.5:
0.5.19 in 5.2 min, 0.5.23 in 5.0 min) judged each survivor with every check and then with its
lesson's default run, the simulation included: 0.5.19's and 0.5.23's `is` -> `==` in
`invalidate_cached_bootstrap_infos` is killed there (the simulation restarts a prefill on
its own ports, where equal generations are not identical), nothing else.
Configurations `prefill_complete` and `deferred_release` (0.5.23's deferred decode allocation
and deferred KV release, `configs.py`, with upstream's prefill-side manager, `prefill.py`:
mooncake's own prefill `__init__`, transfer worker and bootstrap loop on an engine stand-in)
brought four failed-resurrect checks: `retired-receiver-abort`, `prefill-failure-told`,
`reused-room-abort-acked` and `acked-abort-stays-failed`. 0.5.23's nine failed-resurrect
survivors were judged again with every check (`--resume --only`, `--deep --explore-locks`,
JOBS=1, 2026-12-02): at `13223fc` (load average 3.6 to 4.8, 3.7 min) mutants 24
(`_notify_bootstrap` deleted from `update_status`) and 28 (the not-owner latch of `abort()`)
were killed; 29 and 33 read killed there only because the unmutated tree's simulation hit its
budget (`unknown -> ok`), which the deep stage no longer counts (judged again at `f8be23a`:
survived); the latest, at `1dd9963` (load average 0.0 to 0.7, 3.5 min), judged all nine with the four
checks: 24 and 28 again, 20 (the reset of a poisoned room deleted from `update_status`) and
17 (Failed's terminal `return` deleted) killed, the other five survive. 0.5.19 offers neither
configuration (no deferred allocation, no poisoned rooms), so none of its survivors can meet
these checks.
Then a fifth, `rendezvous-abort-told` (configuration `prefill_complete`,
`upstream/configured/failed_resurrect_rendezvous.py`): decode receivers whose `init` really fetched
the prefill's ranks and sent its BOOTSTRAP (a reference prefill whose bootstrap server
announces the policy); a request given up on (its wait for the prefill's forward timed out,
or aborted while waiting) has told each rank once when it reads Failed, and a request that
ended and was cleared tells nothing when aborted late, its room's id reused or not. 0.5.23's
19 non-equivalent survivors were judged again with every check (`--resume --only`, `--deep
--explore-locks`, JOBS=1, 2026-12-06 at `0180ba5`, load average 4.5 to 6.5, 10.5 min): 27
(`ensure_abort_notified()` deleted from `abort()`: the prefill hears of the request only at
its `clear`, which tells a room not yet told under this policy) and 29 (the not-owner
`return` deleted: a cleared receiver's late abort sends an ABORT for the room) killed, the
other seventeen survive; 187 (poll's `_lifecycle_lock`) then fell to the lock stage's new
exploration (below).

The lock stage (`--explore-locks`, on in `ci/upstream_mutation.sh`): the default run
scripts one interleaving (hooks), so a removed lock is never contended there. A survivor
whose operator removed a lock is judged again with `--sglang TREE --explore` over the
explorations that contend its lesson's locks (`EXPLORED_WITH`), and the same explorations
on the unmodified tree (two runs; a verdict that varies between them counts as `unknown`):
killed only where the mutant's verdict is `bug` and the unmodified tree's `ok`; one that
stops at its bound (`unknown`) kills nothing. The lesson's own stale-bootstrap properties
cannot judge there: each runs whole requests through upstream's receivers, the relays and
real sockets (about 0.1 s per interleaving, hundreds of orders apart), and their
exhaustive and bound-2 searches stop at the 30 s bound on the unmodified 0.5.19 tree
(`unknown`: 136 to 508 interleavings); and in their stub world a holder's send to a
restarted prefill's old port does not fail on upstream's code (measured: the request is
not Failed, the entry stays cached), so no send drives their invalidations there. The
stage runs two properties narrowed to one `connection_lock` section and the section that
can split it, two threads each (`reference/explore/locked_sections.py`, run only when
named): `invalidation-vs-eviction` (a holder's `invalidate_cached_bootstrap_infos()`
against the heartbeat's `_handle_node_failure` of that prefill; all 2 interleavings, under
0.5 s) and `fill-vs-eviction-walk` (`_setup_bootstrap_infos()` filling a key against the
heartbeat's walk of the pool; bound 2, 17 interleavings, 1.6 to 2.4 s), plus
`live-set-race`'s `every-affected-room-failed` for that lesson's mutants. Run on the
committed lock survivors (`--resume --only`, `--explore-locks`, JOBS=1, 2026-12-02 at
`d5721a0`, load average 8 to 10: 0.5.19's five in 5.0 min, 0.5.23's four in 6.2 min,
baselines included): the removed locks of `invalidate_cached_bootstrap_infos` (the
eviction deletes the key between its check and its `del`: KeyError), of
`_handle_node_failure` (the same KeyError in the holder, and a fill lands inside its walk:
RuntimeError) and of the fill's `setdefault` (RuntimeError: dictionary changed size during
iteration, in the heartbeat) are killed on both releases, after 2 to 3 interleavings; the
socket locks of mooncake's `send_metadata` and `_register_kv_args` (0.5.19) and 0.5.23's
`poll` hold under both sections. A third section, `recompute-failure-vs-poll`
(0.5.23, configuration `prefill_complete`: the receiver's `_lifecycle_lock`, a
`nullcontext()` in the default configuration): one thread lands the prefill's Success and
polls, the other runs the prefill-recompute callback's failure (`_fail_prefill_recompute`);
a poll that read Success must not be followed by the request's failure. All 2 interleavings
hold on the unmodified tree; without `poll`'s lock the poll reads Success between the
callback's check and its abort, which records a failure for the finished request (`bug`
after 4). Judged on 0.5.23's 187 (`--resume --only 187`, `--deep --explore-locks`, JOBS=1,
2026-12-06 at `69bdb3b`, load average 4.2 to 5.0, 1.8 min): killed. 0.5.19 has no such
lock or callback (`unknown` there, mutant and unmodified tree alike): its two lock
survivors judged again with it (`--only 155 --only 192`) still survive.
A removed lock whose section no thread can split (one C-level dict operation, or a lock
only the heartbeat thread takes) is equivalent (`survivors.UNCONTENDED`); the per-endpoint
socket lock (libzmq's state, inside one pyzmq call frontrun neither traces nor splits)
stays a gap, with that reason.

Five stale-bootstrap checks became simulation invariants of the same names
(`dead-prefill-disconnected`, `abort-reaches-prefill`, `aborted-stays-failed`,
`send-failure-stops-sends`, `send-after-failed-init`: `reference/sim/notices.py`), so a kill
the log kept from them no longer holds with `--quick`. The deep stage runs stale-bootstrap's
default run too for a failed-resurrect or live-set-race survivor (`DEEP_ALSO`: `abort()`
sends the notification the waiting timeout shares, the failure handler disconnects what
stale-bootstrap caches). Every mutant whose logged kill came from those checks alone (0.5.19:
15, 17, 19, 29, 36, 41, 139 to 142, 150, 161; 0.5.23: 44, 51, 56, 155 to 158, 167, 173) was
judged again (`--only`, `--deep`, JOBS=1, 2026-12-06, load average 3 to 7): each killed by the
default run's simulation (15 by failed-resurrect's too); their log lines are that run's. 150,
161, 167 and 173 (a `return` deleted from `send_metadata`: after a failed fetch, after a
refused connect) survived a first run, whose 30 generated runs on upstream (mostly
Hypothesis's targeting of one plan) drew neither step; the simulation's drain now probes
each prefill with both in every stale-bootstrap run, and they are killed.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reference.upstream.mutate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("wheel", type=Path, nargs="?")
    parser.add_argument("--header", action="store_true", help="print the summary's header and stop")
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    parser.add_argument("--limit", type=int, default=0, help="judge only the first N mutants (0: all)")
    parser.add_argument("--only", type=int, action="append", default=[], help="judge only mutant N (1-based)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants judged at once")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for one run of every lesson")
    parser.add_argument(
        "--from-log", type=Path, default=None, help="summarize a run's log instead of running"
    )
    parser.add_argument(
        "--resume",
        type=Path,
        default=None,
        help="keep the detected mutants of this log (with --only: every line but those), judge the rest",
    )
    parser.add_argument("--log", type=Path, default=None, help="write one line per mutant here")
    parser.add_argument(
        "--deep",
        action="store_true",
        help="judge a survivor again with its lesson's default run (the simulation)",
    )
    parser.add_argument(
        "--explore-locks",
        action="store_true",
        help="judge a survivor that removed a lock again with the explorations that contend it",
    )
    args = parser.parse_args(argv)
    if args.header:
        print(HEADER)
        return 0
    if args.wheel is None or not args.wheel.is_file():
        print(f"python -m reference.upstream.mutate: no such wheel: {args.wheel}", file=sys.stderr)
        return 2
    for log_path in (args.from_log, args.resume):
        if log_path is not None and not log_path.is_file():
            print(f"python -m reference.upstream.mutate: no such log: {log_path}", file=sys.stderr)
            return 2
    if args.from_log is not None:
        log = args.from_log.read_text().splitlines()
    else:
        found = all_mutants(args.wheel)
        if args.limit:
            found = found[: args.limit]
        try:
            log = _judge_all(args, found)
        except BaselineError as exc:
            print(f"python -m reference.upstream.mutate: {exc}", file=sys.stderr)
            return 2
        if args.log:
            args.log.write_text("\n".join(log) + "\n")
    text = summarize(args.wheel, log)[0]
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
