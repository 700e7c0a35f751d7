"""Makes `pytest --impl ../my_fix` work from the checkout when this template is copied outside it.

pytest picks its configuration from the paths on its command line before it knows the
`--impl` option: it takes `../my_fix` for a test path, roots the session in this folder,
misses the checkout's `pyproject.toml` (which loads the `--impl` plugin) and would stop
with "unrecognized arguments: --impl". Rooted here, pytest loads this file first. It
declares the plugin's two options, so the command line parses, then runs the same
command again from the checkout with `--impl=PATH` (a form pytest never takes for a test
path) and exits with that run's status. Wherever the checkout's plugin is loaded (inside
the checkout, or with `--impl=PATH`), this file does nothing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

PLUGIN = "reference.harness.pytest_plugin"
VALUED = ("--impl", "--impl-timeout")


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if pluginmanager.has_plugin(PLUGIN):
        return
    for name in VALUED:
        parser.addoption(name, default=None, help=f"see `{PLUGIN}` in the checkout")


def checkout() -> Path | None:
    """The checkout whose `reference` package this Python imports, if it is one."""
    import reference

    root = Path(reference.__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "tests").is_dir() else None


def rewritten(args: Sequence[str], here: Path) -> list[str]:
    """`args` with `--impl PATH` as `--impl=/abs/PATH` and other existing paths made absolute."""
    out: list[str] = []
    values = iter(args)
    for arg in values:
        if arg in VALUED:
            value = next(values, "")
            arg = f"{arg}={value}"
        name, sep, value = arg.partition("=")
        if name == "--impl" and sep and (here / value).exists():
            arg = f"--impl={(here / value).resolve()}"
        elif not arg.startswith("-") and (here / arg).exists():
            arg = str((here / arg).resolve())
        out.append(arg)
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.pluginmanager.has_plugin(PLUGIN):
        return None
    root = checkout()
    args = rewritten(config.invocation_params.args, config.invocation_params.dir)
    if root is None:
        raise pytest.UsageError(f"run it from the checkout as: pytest {' '.join(args)}")
    print(f"pytest: {' '.join(args)}, from {root} (its configuration loads --impl)", file=sys.stderr)
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=root, check=False).returncode
