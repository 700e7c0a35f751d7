"""The upstream mutation's lock stage (`reference/upstream/mutate.py --explore-locks`).

A survivor that removed a lock is judged again by the explorations that contend it
(`EXPLORED_WITH`, the two-thread sections of `reference/explore/locked_sections.py`) on
a tree made from the wheel: a mutant whose removed `connection_lock` lets the other
section split it is `bug` there and the unmutated tree `ok`; the stage kills only that
difference, never a search that stopped at its bound (`unknown`). The sections run only
when named (`--property`), never in a bare `--explore`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from reference.explore import cli as explore_cli
from reference.upstream import mutate
from reference.upstream.mutate import EXPLORED_WITH, Mutant, all_mutants, explore_run
from reference.upstream.survivors import classify
from reference.upstream.trees import DISAGG, make_tree

SECTIONS = (("stale-bootstrap", "invalidation-vs-eviction"), ("stale-bootstrap", "fill-vs-eviction-walk"))


def _lock_mutant(wheel: Path, target: str, body: str) -> Mutant:
    """The removed lock of `target` whose first guarded line contains `body`."""
    for mutant in all_mutants(wheel):
        if mutant.operator == "remove a lock" and mutant.target == target:
            guarded = mutant.text.splitlines()[mutant.line].strip()
            if body in guarded:
                return mutant
    raise AssertionError(f"no removed lock of {target} guarding {body!r}")


def _tree(wheel: Path, root: Path, mutant: Mutant | None = None) -> Path:
    tree = make_tree(wheel, root)
    if mutant is not None:
        (tree / DISAGG / mutant.file).write_text(mutant.text, encoding="utf-8")
    return tree


# (target, its first guarded line, the section that splits it, what the mutant's run shows)
KILLS = [
    ("CommonKVReceiver.invalidate_cached_bootstrap_infos", "for bootstrap_key",
     "invalidation-vs-eviction", "KeyError"),
    ("CommonKVManager._handle_node_failure", "keys_to_remove = [",
     "invalidation-vs-eviction", "KeyError"),
    ("CommonKVReceiver._setup_bootstrap_infos", "connection_pool.setdefault(",
     "fill-vs-eviction-walk", "RuntimeError: dictionary changed size during iteration"),
]  # fmt: skip


@pytest.mark.slow  # four explorations in child processes under frontrun, per release
@pytest.mark.timeout(240)  # 75 to 97 s at load average 7 to 8 (about 30 s of CPU)
@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_a_removed_pool_lock_is_bug_where_the_unmutated_tree_is_ok(version, tmp_path) -> None:
    from upstream_wheels import wheel

    release = wheel(version)
    status, unmutated, note = explore_run(_tree(release, tmp_path / "unmutated"), SECTIONS, 120.0)
    assert status == "ran", note
    for key in ("stale-bootstrap/invalidation-vs-eviction", "stale-bootstrap/fill-vs-eviction-walk"):
        assert unmutated[key][0] == "ok", unmutated[key]
    for target, body, section, symptom in KILLS:
        mutant = _lock_mutant(release, target, body)
        status, found, note = explore_run(
            _tree(release, tmp_path / f"m{mutant.line}", mutant), (("stale-bootstrap", section),), 120.0
        )
        verdict, said = found[f"stale-bootstrap/{section}"]
        assert (status, verdict) == ("ran", "bug"), f"{target}: {verdict} {said} {note}"
        assert symptom in said, said


RECOMPUTE = ("stale-bootstrap", "recompute-failure-vs-poll")


@pytest.mark.slow  # three explorations in child processes under frontrun
@pytest.mark.timeout(240)
def test_the_removed_lifecycle_lock_of_poll_is_bug_where_the_unmutated_tree_is_ok(tmp_path) -> None:
    """0.5.23, configuration `prefill_complete`: without `poll`'s `_lifecycle_lock` the
    scheduler's poll reads Success between the recompute callback's check and its abort,
    which then records a failure for that request. 0.5.19 has neither (unknown)."""
    from upstream_wheels import wheel

    key = "/".join(RECOMPUTE)
    status, unmutated, note = explore_run(_tree(wheel("0.5.23"), tmp_path / "unmutated"), (RECOMPUTE,), 120.0)
    assert (status, unmutated[key][0]) == ("ran", "ok"), (unmutated, note)
    mutant = _lock_mutant(wheel("0.5.23"), "CommonKVReceiver.poll", "return self._poll()")
    tree = _tree(wheel("0.5.23"), tmp_path / "mutant", mutant)
    status, found, note = explore_run(tree, (RECOMPUTE,), 120.0)
    assert (status, found[key][0]) == ("ran", "bug"), (found, note)
    assert "poll read Success, then the recompute callback failed the request" in found[key][1]
    status, older, note = explore_run(_tree(wheel("0.5.19"), tmp_path / "older"), (RECOMPUTE,), 120.0)
    assert (status, older[key][0]) == ("ran", "unknown"), (older, note)


def _canned(baseline: dict[str, tuple[str, str]], got: dict[str, tuple[str, str]], monkeypatch) -> str:
    monkeypatch.setattr(mutate, "explore_run", lambda tree, pairs, timeout: ("ran", got, ""))
    mutant = Mutant("common/conn.py", "C.m", 1, "remove a lock", "with self.lock:", "", "stale-bootstrap")
    outcome, how = mutate._explored(Path("."), mutant, lambda lesson: baseline, 1.0)  # type: ignore[arg-type]
    return f"{outcome} | {how}"


def test_only_ok_to_bug_is_a_kill(monkeypatch) -> None:
    ok, bug = ("ok", "holds"), ("bug", "thread died: KeyError [after 2 interleavings]")
    bound = ("unknown", "no counterexample in 9 interleavings, but stopped at the 30 s bound")
    key = "stale-bootstrap/invalidation-vs-eviction"
    assert _canned({key: ok}, {key: bug}, monkeypatch).startswith("killed | explore " + key + ": ok -> bug")
    assert _canned({key: ok}, {key: bound}, monkeypatch).startswith("survived | undecided (no kill)")
    assert _canned({key: bound}, {key: bug}, monkeypatch).startswith("survived")  # unmutated undecided
    assert _canned({key: bug}, {key: bug}, monkeypatch).startswith("survived")
    assert _canned({key: ok}, {key: ok}, monkeypatch) == f"survived | explorations held: {key}"


def test_a_baseline_verdict_that_varies_kills_nothing(monkeypatch, tmp_path) -> None:
    key = "stale-bootstrap/invalidation-vs-eviction"
    runs = iter([{key: ("ok", "holds")}, {key: ("unknown", "stopped at the 30 s bound")}])
    monkeypatch.setattr(mutate, "make_tree", lambda wheel, root: root)
    monkeypatch.setattr(mutate, "explore_run", lambda tree, pairs, timeout: ("ran", next(runs), ""))
    baselines = mutate.ExploreBaselines(Path("x.whl"), tmp_path, 1.0)
    assert baselines("stale-bootstrap") == {key: ("unknown", "varied")}


def test_every_explored_property_exists() -> None:
    from reference.explore import ON_REQUEST, PROPERTIES

    for pairs in EXPLORED_WITH.values():
        for lesson, prop in pairs:
            ids = {p.id for p in (*PROPERTIES.get(lesson, ()), *ON_REQUEST.get(lesson, ()))}
            assert prop in ids, (lesson, prop)


def test_the_sections_run_only_when_named() -> None:
    def selected(*props: str) -> set[str]:
        args = argparse.Namespace(lesson=["stale-bootstrap"], property=list(props) or None)
        found = explore_cli._select(args)
        assert not isinstance(found, str), found
        return {p.id for p in found}

    assert not selected() & {"invalidation-vs-eviction", "fill-vs-eviction-walk"}
    assert selected("invalidation-vs-eviction") == {"invalidation-vs-eviction"}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("with lock:", "gap: the per-endpoint socket lock"),
        ("with self._lifecycle_lock:", "gap: `_lifecycle_lock` is a `nullcontext()`"),
        ("with self.kv_mgr.connection_lock:", "gap: the default run scripts one interleaving"),
    ],
)
def test_a_lock_the_stage_cannot_contend_says_why(line: str, why: str) -> None:
    assert classify("remove a lock", line, "stale-bootstrap", "", "x = 1").startswith(why)
