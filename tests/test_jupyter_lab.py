"""The README's command opens the notebooks: `.venv/bin/jupyter lab notebooks/` starts on
127.0.0.1 (a free port, no browser, a token) and answers over HTTP; then it is stopped,
and nothing it started is left behind (tests/conftest.py checks leftovers)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("jupyterlab", reason="needs the `notebooks` extra (JupyterLab)")

ROOT = Path(__file__).resolve().parents[1]
JUPYTER = Path(sys.executable).parent / "jupyter"
TOKEN = "reading-group"
START_BOUND_S = 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


@pytest.mark.timeout(START_BOUND_S + 30)
def test_jupyter_lab_starts_answers_and_stops(tmp_path):
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path))
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path / "workspaces")
    command = [str(JUPYTER), "lab", "notebooks/", "--no-browser", "--ip=127.0.0.1", f"--port={port}"]
    command += [f"--IdentityProvider.token={TOKEN}", "--ServerApp.port_retries=0"]
    command += ["--allow-root"] if os.geteuid() == 0 else []  # CI containers run as root
    log = (tmp_path / "lab.log").open("wb")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, answer = time.monotonic() + START_BOUND_S, None
        while answer is None and time.monotonic() < deadline and server.poll() is None:
            try:
                answer = _get(f"{base}/api/contents?token={TOKEN}")
            except OSError:
                time.sleep(0.2)  # not listening yet: polling a start-up, not ordering a race
        assert answer is not None, (
            f"no answer on {base} within {START_BOUND_S} s (exit {server.poll()}): "
            + (tmp_path / "lab.log").read_text()[-500:]
        )
        status, body = answer
        assert status == 200
        names = {item["name"] for item in json.loads(body)["content"]}
        assert "01_failed_resurrect.ipynb" in names, f"lab opened elsewhere: {sorted(names)}"
        assert _get(f"{base}/lab?token={TOKEN}")[0] == 200, "the lab page does not load"
        assert _get(f"{base}/api/contents")[0] == 403, "answers without the token"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()
