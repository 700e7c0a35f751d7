"""An argparse parser whose errors are one line on stderr, exit 2, never a traceback.

Shared by every command-line entry point (`python -m reference`, `reference.bootstrap`,
`benchmarks`) so bad flags read the same everywhere.
"""

import argparse


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")
