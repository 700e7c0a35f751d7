"""A small, readable reference of sglang's PD-disaggregation control plane.

Four upstream reliability fixes, each in a buggy and a fixed form, with scenarios
that turn the race or leak behind each into a deterministic verdict. See README.md.
"""

__version__ = "0.1.0"
