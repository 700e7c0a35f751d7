"""The stale-bootstrap explorations added for the census's known gaps (reference/explore/stale_bootstrap.py).

`invalidation-vs-other-eviction` and `fill-vs-other-eviction` race the heartbeat's walk
of `connection_pool` (made visible to the explorer by `SeenPool`) against a receiver's
deletion or insertion; `cp-rank-route-fails` and `cp-rank-refuses` run one request
against a CP-2 stub prefill whose CP rank 1 fails alone. Each holds on fixed and
hardened and is `bug` on one broken copy: the semantic mutation operator's `remove-lock`
edits of fixed (a heartbeat that walks the pool without `connection_lock`, a fill whose
`setdefault` is unlocked), and the gallery's wrong fixes
that skip the invalidation on a fetch or a registration failure. Run in process through
the default run's entry (`deep.explore_within`), with a bound share.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import pytest

import reference.buggy
import reference.fixed
import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.mutate.mutants import ROOT
from reference.mutate.operators import mutate
from reference.mutate.runner import _copy
from reference.variants import load_impl

SHARE = 20.0  # seconds; each search ends in about a second here, the bound only caps a hang
NEW = ("invalidation-vs-other-eviction", "fill-vs-other-eviction", "cp-rank-route-fails", "cp-rank-refuses")
GALLERY = "reference/lessons/stale_bootstrap/wrong_fixes"


def _without_lock(workdir: Path, file: str, function: str, guarded: str) -> types.ModuleType:
    """reference/fixed with the semantic mutation operator's `remove-lock` edit of the
    section in `function` whose first statement contains `guarded` (the census's mutants:
    the heartbeat's `_handle_node_failure`, `5b25d20e18`; the fill's `setdefault`)."""
    code = (ROOT / "reference" / "fixed" / file).read_text()
    lines = code.splitlines()
    (edit,) = [
        e
        for e in mutate(code)
        if e.operator == "remove-lock" and e.function == function and guarded in lines[e.line]
    ]
    return load_impl(str(_copy("fixed", workdir, f"unlocked_{edit.line}", (file, edit.source)))).module


def _prop(prop_id: str):
    (prop,) = [p for p in PROPERTIES["stale-bootstrap"] if p.id == prop_id]
    return prop


def _gallery(name: str) -> types.ModuleType:
    return load_impl(f"{GALLERY}/{name}.py").module


BROKEN: dict[str, tuple[Callable[[Path], types.ModuleType], str]] = {
    "invalidation-vs-other-eviction": (
        lambda at: _without_lock(
            at, "manager.py", "KVManager._handle_node_failure", "_forget_prefill_locked"
        ),
        "dictionary changed size during iteration",
    ),
    "fill-vs-other-eviction": (
        lambda at: _without_lock(at, "receiver.py", "KVReceiver._setup_bootstrap_infos", "setdefault"),
        "dictionary changed size during iteration",
    ),
    "cp-rank-route-fails": (lambda _: _gallery("no_fetch_invalidation"), "but the cache keeps"),
    "cp-rank-refuses": (lambda _: _gallery("no_registration_invalidation"), "but the cache keeps"),
}


@pytest.mark.parametrize("variant", [reference.fixed, reference.hardened], ids=["fixed", "hardened"])
@pytest.mark.parametrize("prop_id", NEW)
def test_holds_on_fixed_and_hardened(prop_id, variant):
    held = deep.explore_within(_prop(prop_id), variant, SHARE)
    assert held.verdict == "ok", held.symptom


@pytest.mark.parametrize("prop_id", NEW)
def test_finds_the_broken_copy(prop_id, tmp_path):
    build, symptom = BROKEN[prop_id]
    found = deep.explore_within(_prop(prop_id), build(tmp_path), SHARE)
    assert found.verdict == "bug", found.symptom
    assert symptom in found.symptom and found.schedule


@pytest.mark.parametrize("prop_id", ["cp-rank-route-fails", "cp-rank-refuses"])
def test_cp_properties_are_bug_on_buggy(prop_id):
    found = deep.explore_within(_prop(prop_id), reference.buggy, SHARE)
    assert found.verdict == "bug" and "but the cache keeps" in found.symptom, found.symptom


def test_registered_as_deep_checks_of_the_lesson():
    from reference.lessons import LESSONS

    ids = {c.id for c in LESSONS["stale-bootstrap"].checks if c.id.startswith(deep.PREFIX)}
    assert {deep.PREFIX + p for p in NEW} <= ids
