"""The leftovers check itself: it must fail a test that leaks, and pass one that cleans up."""

import threading
from pathlib import Path

pytest_plugins = ["pytester"]
CONFTEST = (Path(__file__).parent / "conftest.py").read_text()


def test_leaked_thread_socket_and_clean_test(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        """
        import socket, threading

        STOP = threading.Event()
        KEEP = []

        def test_leaks_a_thread():
            threading.Thread(target=STOP.wait, args=(30,), name="leaky").start()

        def test_leaks_a_socket():
            KEEP.append(socket.socket())

        def test_cleans_up():
            STOP.set()
            for s in KEEP:
                s.close()
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join(5)
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3, errors=2)
    out = result.stdout.str()
    assert "threads left running: ['leaky']" in out and "sockets left open: 1" in out
    assert not [t for t in threading.enumerate() if t.name == "leaky"]
