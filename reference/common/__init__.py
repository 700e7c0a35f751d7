"""Component code that is the same in every variant (upstream `common/conn.py`).

The variant folders (`reference/buggy`, `reference/fixed`) subclass these bases and
hold only the methods an upstream fix touched, so that diffing them shows the fix.
"""
