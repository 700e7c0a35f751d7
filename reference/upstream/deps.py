"""The third-party packages upstream's own code needs here: the `upstream` extra.

The loader gives a package that is not installed a stand-in module, so a version whose
import list grew still loads (`loader.py`). For the packages below that is wrong: the
code the lessons drive calls them (mooncake's `pack_int_lists` is numpy, 0.5.23's
bootstrap messages are msgspec structs, the receivers' sockets are pyzmq, the
bootstrap server is aiohttp). A stand-in for one of them would surface much later as a
`NameError` inside some verdict; instead the load stops with one line naming the
package and the extra that installs it (`pip install -e '.[upstream]'`).
"""

from __future__ import annotations

import importlib.machinery
import sys

from reference.upstream.errors import UpstreamError

EXTRA = "pip install -c ci/constraints.txt -e '.[upstream]'"
# import name -> the distribution that provides it (pyzmq, aiohttp: base dependencies).
REQUIRED = {"numpy": "numpy", "msgspec": "msgspec", "zmq": "pyzmq", "aiohttp": "aiohttp"}


class MissingDependency(UpstreamError):
    """A package upstream's code needs is not installed (one line, naming the extra)."""


def installed(top: str) -> bool:
    """Whether `import top` can give the real package (not a stand-in, not blocked)."""
    if top in sys.modules:
        module = sys.modules[top]
        return module is not None and type(module).__name__ != "StandIn"
    return importlib.machinery.PathFinder.find_spec(top) is not None


def missing() -> list[str]:
    """The distributions of `REQUIRED` that are not installed, in order."""
    return [dist for top, dist in REQUIRED.items() if not installed(top)]


def require(label: str = "the upstream adapter", file: str | None = None) -> None:
    """Raise `MissingDependency` when a required package is absent."""
    absent = missing()
    if absent:
        where = f" (sglang/{file} imports it)" if file else ""
        raise MissingDependency(f"{label} needs {', '.join(absent)}{where}, not installed: {EXTRA}")


def check_import(top: str, label: str, file: str | None, failed: bool = False) -> None:
    """Called by the loader before it gives `top` a stand-in, and when `import top`
    failed (`failed`) in one of upstream's files."""
    if top in REQUIRED and (failed or not installed(top)):
        raise MissingDependency(
            f"{label}: sglang/{file or '?'} imports {top} ({REQUIRED[top]}), not installed: {EXTRA}"
        )
