"""What the over-the-wire benchmarks share: a free loopback port, a throw-away `groupcoord serve` (journal off,
warnings only, a temporary data directory) that is up before the body runs and terminated after, and the
two-column table they print."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def throwaway_server(*extra: str) -> Iterator[int]:
    """Starts `groupcoord serve` on a free port over a temporary data directory; yields the port once it
    accepts connections (at most 10 s) and terminates the server afterwards."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        cmd = [sys.executable, "-m", "groupcoord.server", "serve", "--port", str(port), "--data-dir", data,
               "--log-level", "warning", "--journal", "false", *extra]  # fmt: skip
        srv = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield port
        finally:
            srv.terminate()
            srv.wait(10)


def print_rows(title: str, rows: Sequence[tuple[str, str]], width: int = 55) -> None:
    print(title)
    print(f"{'scenario':{width}} {'result':>16}")
    for name, value in rows:
        print(f"{name:{width}} {value:>16}")
