"""Benchmarks of what the four upstream fixes cost and what they buy.

- lock overhead: per operation, buggy against fixed, measured side by side in one
  pytest-benchmark session (`benchmarks/test_*.py`) and reported as ns/op and the
  fixed/buggy ratio;
- failure detection time: heartbeat interval and max failures against the
  interval x failures bound (`benchmarks/detection.py`);
- recovery after a prefill restart on the loopback transport (`benchmarks/recovery.py`).

`python -m benchmarks` runs everything and writes JSON and PNG plots to
`benchmarks/results/`; `python -m benchmarks --smoke` is the quick CI form.
"""
