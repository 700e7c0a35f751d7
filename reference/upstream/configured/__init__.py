"""The bodies of checks that run only in a named configuration of upstream's code.

A lesson's checklist names these checks with the configuration they need (`Check.configuration`,
e.g. `mla`, `staging`, `prefill_complete`, `deferred_release`: `reference/upstream/configs.py`).
Our own forms model none of those configurations, so no `--impl` or `--variant` run reaches
them; only `--sglang` on a release that offers the configuration does. Their scenarios drive
upstream's own classes in that configuration, so they live here, beside the configurations,
and the lesson names each body with `reference.harness.checks.deferred`.
"""
