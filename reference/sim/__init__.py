"""A seeded, deterministic simulation of a small PD cluster, with invariants.

`plan.py` (a run as data, drawn by Hypothesis with swarm fault selection),
`cluster.py` (decode managers, receivers and prefills on the mock transport and the
virtual clock, driven step by step), `invariants.py` (each lesson's executable spec),
`heap.py` (the whole-state bound's object-graph walk), `run.py` (one plan, one run),
`search.py` (find and shrink a failing plan within a budget), `report.py` and
`replay.py` (the counterexample's timeline and its replay file), `profiles.py` (which
faults each lesson switches on) and `check.py` (the lessons' `simulation` check).
See README.md in this folder.
"""
