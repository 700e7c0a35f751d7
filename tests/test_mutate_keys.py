"""A semantic mutant's key (reference/mutate/mutants.py `edit_key`) names the edit, not the
file: an edit elsewhere in the module leaves it alone (so `judgments.py` keeps its
judgment), a change to the mutated function gives a new one (the judgment read the old
function and must be read again)."""

from __future__ import annotations

import textwrap

from reference.mutate.mutants import edit_key
from reference.mutate.operators import Source, mutate

MODULE = textwrap.dedent("""
    import threading


    class C:
        def __init__(self):
            self.lock = threading.Lock()
            self.items = set()

        def add(self, x):
            with self.lock:
                self.items.add(x)
                self.count = len(self.items)

        def other(self):
            return 1
""").lstrip("\n")


def _keys(code: str, operator: str, function: str) -> dict[str, str]:
    """description -> key of each `operator` edit in `function`."""
    spans = Source(code).function_lines()
    return {
        e.description: edit_key("fixed", "m.py", code, e, spans)
        for e in mutate(code, [operator])
        if e.function == function
    }


def test_key_is_stable_under_an_edit_elsewhere_in_the_file():
    before = _keys(MODULE, "remove-lock", "C.add")
    assert len(before) == 1
    elsewhere = MODULE.replace("return 1", "return 2").replace(
        "import threading\n", "import threading\nX = 0\n"
    )
    assert _keys(elsewhere, "remove-lock", "C.add") == before


def test_key_changes_when_the_mutated_function_changes():
    before = _keys(MODULE, "remove-lock", "C.add")
    changed = MODULE.replace("self.count = len(self.items)", "self.count = len(self.items) + 0")
    after = _keys(changed, "remove-lock", "C.add")
    assert len(after) == 1 and set(after.values()).isdisjoint(before.values())


def test_edits_of_one_function_have_distinct_keys():
    keys = _keys(MODULE, "swap-stmts", "C.add") | _keys(MODULE, "split-lock", "C.add")
    assert len(set(keys.values())) == len(keys) >= 2


def test_weak_ref_key_ignores_where_the_import_lands():
    before = _keys(MODULE, "weak-ref", "C.__init__")
    moved = MODULE.replace("import threading\n", '"""Doc."""\nimport threading\n')
    assert len(before) == 1 and _keys(moved, "weak-ref", "C.__init__") == before


GUARDED = textwrap.dedent("""
    class C:
        def send(self, items):
            if self.waiting:
                self.held = items
                return
            self.out(items)

        def middle(self):
            return 0

        def poll(self):
            self.send(self.pending)
""").lstrip("\n")


def test_move_guard_key_depends_on_both_functions_it_edits_only():
    (key,) = _keys(GUARDED, "move-guard", "C.send").values()
    between = GUARDED.replace("return 0", "return 1")  # a function between the two
    assert list(_keys(between, "move-guard", "C.send").values()) == [key]
    caller = GUARDED.replace("self.send(self.pending)", "self.send(self.pending)\n        x = 1")
    assert list(_keys(caller, "move-guard", "C.send").values()) != [key]
