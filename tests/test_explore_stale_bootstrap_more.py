"""The stale-bootstrap explorations added for the census's known gaps (reference/explore/stale_bootstrap.py).

`invalidation-vs-other-eviction` and `fill-vs-other-eviction` race the heartbeat's walk
of `connection_pool` (made visible to the explorer by `SeenPool`) against a receiver's
deletion or insertion; `cp-rank-route-fails` and `cp-rank-refuses` run one request
against a CP-2 stub prefill whose CP rank 1 fails alone. Each holds on fixed and
hardened and is `bug` on one broken copy: a heartbeat that walks the pool without
`connection_lock`, a fill whose `setdefault` is unlocked, and the gallery's wrong fixes
that skip the invalidation on a fetch or a registration failure. Run in process through
the default run's entry (`deep.explore_within`), with a bound share.
"""

from __future__ import annotations

import types

import pytest

import reference.buggy
import reference.fixed
import reference.hardened
from reference.explore import PROPERTIES
from reference.harness import deep
from reference.variants import load_impl

SHARE = 20.0  # seconds; each search ends in about a second here, the bound only caps a hang
NEW = ("invalidation-vs-other-eviction", "fill-vs-other-eviction", "cp-rank-route-fails", "cp-rank-refuses")
GALLERY = "reference/lessons/stale_bootstrap/wrong_fixes"


class _UnlockedEviction(reference.fixed.KVManager):
    """The heartbeat forgets the prefill without `connection_lock` (mutant `5b25d20e18`)."""

    def _handle_node_failure(self, failed_bootstrap_addr: str) -> None:
        addr = failed_bootstrap_addr
        stale_endpoints = self._forget_prefill_locked(addr)  # the mistake: no lock
        affected_rooms = list(self.addr_to_rooms_tracker.get(addr, ()))
        self.addr_to_rooms_tracker.pop(addr, None)
        self._disconnect(stale_endpoints)
        for room in affected_rooms:
            self._fail_lost_room(room, addr)


class _UnlockedAdopt(reference.fixed.KVReceiver):
    """The fill adopts a concurrent winner without `connection_lock` (as mutant `3a75adb3e8`)."""

    def _setup_bootstrap_infos(self) -> None:
        all_infos: list[dict] = []
        for cp_rank in self.target_cp_ranks:
            key = self._bootstrap_key(cp_rank)
            with self.kv_mgr.connection_lock:
                cached = self.kv_mgr.connection_pool.get(key)
            if cached is None:
                infos = self._fetch_bootstrap_infos(cp_rank)
                if infos is None:
                    self._fail_fetch()
                    self.invalidate_cached_bootstrap_infos()
                    return
                self.bootstrap_infos = infos
                self._connection_pool_entries[key] = infos
                if not self._register_kv_args():
                    self.invalidate_cached_bootstrap_infos()
                    return
                self.bootstrap_infos = self.kv_mgr.connection_pool.setdefault(key, infos)  # the mistake
                self._connection_pool_entries[key] = self.bootstrap_infos
            else:
                self.bootstrap_infos = cached
                self._connection_pool_entries[key] = cached
            all_infos.extend(self.bootstrap_infos)
        self.bootstrap_infos = all_infos


def _variant(manager: type, receiver: type) -> types.ModuleType:
    module = types.ModuleType(f"broken_{manager.__name__}_{receiver.__name__}")
    module.KVManager = manager  # type: ignore[attr-defined]
    module.KVReceiver = receiver  # type: ignore[attr-defined]
    return module


def _prop(prop_id: str):
    (prop,) = [p for p in PROPERTIES["stale-bootstrap"] if p.id == prop_id]
    return prop


def _gallery(name: str) -> types.ModuleType:
    return load_impl(f"{GALLERY}/{name}.py").module


BROKEN = {
    "invalidation-vs-other-eviction": (
        lambda: _variant(_UnlockedEviction, reference.fixed.KVReceiver),
        "dictionary changed size during iteration",
    ),
    "fill-vs-other-eviction": (
        lambda: _variant(reference.fixed.KVManager, _UnlockedAdopt),
        "dictionary changed size during iteration",
    ),
    "cp-rank-route-fails": (lambda: _gallery("no_fetch_invalidation"), "but the cache keeps"),
    "cp-rank-refuses": (lambda: _gallery("no_registration_invalidation"), "but the cache keeps"),
}


@pytest.mark.parametrize("variant", [reference.fixed, reference.hardened], ids=["fixed", "hardened"])
@pytest.mark.parametrize("prop_id", NEW)
def test_holds_on_fixed_and_hardened(prop_id, variant):
    held = deep.explore_within(_prop(prop_id), variant, SHARE)
    assert held.verdict == "ok", held.symptom


@pytest.mark.parametrize("prop_id", NEW)
def test_finds_the_broken_copy(prop_id):
    build, symptom = BROKEN[prop_id]
    found = deep.explore_within(_prop(prop_id), build(), SHARE)
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
