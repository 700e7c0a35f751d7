"""The operators of the upstream mutation run (`reference/upstream/mutate.py`), on a
small class: each semantic operator and each of mutmut's yields the change it names,
and only the survivors that cannot change behaviour are classed equivalent."""

from __future__ import annotations

import ast

from reference.upstream.mutate import Mutant, classify, mutants

SOURCE = '''
class CommonKVManager:
    def update_status(self, room, status):
        """Docstring."""
        with self.connection_lock:
            rooms = list(self.tracker)
        if status == KVPoll.Failed and room not in self.request_status:
            return
        self._task = self._loop.create_task(self._cleanup())
        self.request_status[room] = max(status, 1)
        logger.info("done")
'''


def _by_operator() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for mutant in mutants(SOURCE, "common/conn.py", "CommonKVManager", "update_status", "failed-resurrect"):
        ast.parse(mutant.text)  # every mutant is valid Python
        found.setdefault(mutant.operator, []).append(mutant.text)
    return found


def test_every_operator_makes_its_change() -> None:
    found = _by_operator()
    assert any("if True:" in t and "with self.connection_lock" not in t for t in found["remove a lock"])
    assert any("status is KVPoll.Failed" in t for t in found["== -> is"])
    assert any("rooms = self.tracker" in t for t in found["weaken: list(x) -> x"])
    assert any(
        "        self._loop.create_task(self._cleanup())\n" in t for t in found["weaken: drop the held task"]
    )
    assert any("if not (status == KVPoll.Failed and" in t for t in found["move a guard: if not"])
    assert any("status != KVPoll.Failed" in t for t in found["Eq -> NotEq"])
    assert any("room in self.request_status" in t for t in found["NotIn -> In"])
    assert any(" or room not in" in t for t in found["and <-> or"])
    assert any("max(status, 2)" in t for t in found["int + 1"])
    assert len(found["delete a statement"]) >= 4


def _mutant(operator: str, before: str) -> Mutant:
    return Mutant("common/conn.py", "C.m", 1, operator, before, "", "failed-resurrect")


def test_only_behaviour_free_survivors_are_equivalent() -> None:
    assert classify(_mutant("delete a statement", '"""Docstring."""')).startswith("equivalent")
    assert classify(_mutant("delete a statement", 'logger.info("x")')).startswith("equivalent")
    assert classify(_mutant("== -> is", "if status == KVPoll.Failed:")).startswith("equivalent")
    assert not classify(_mutant("delete a statement", "self.request_status.pop(room)")).startswith(
        "equivalent"
    )
    assert not classify(_mutant("remove a lock", "with self.connection_lock:")).startswith("equivalent")
