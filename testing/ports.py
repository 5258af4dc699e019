"""Loopback ports for servers a test starts, safe when tests run in parallel (pytest-xdist, several runs).

Binding port 0 and closing the socket hands back a port from the kernel's *ephemeral* range: the same range
every outgoing connection's local port is drawn from. Between the moment a test picks such a port and the
moment its server binds it, any client connection on the machine can take it, and the server then fails
with "address already in use". The more tests run at once, the likelier that is. Ports below the ephemeral
range are never handed to outgoing connections, so we pick there: each pytest-xdist worker draws from its own
slice (PYTEST_XDIST_WORKER / PYTEST_XDIST_WORKER_COUNT), starting at an offset drawn from the process id so
two unrelated runs rarely meet, and every candidate is checked by binding it. Where the range cannot be read
(not Linux), port 0 is used as before.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading

__all__ = ["free_port"]

_FLOOR = 15000  # below: well-known and registered services (PostgreSQL 5432, Kafka 9092, ...)
_lock = threading.Lock()
_cursor: itertools.count[int] | None = None


def _ephemeral_low() -> int | None:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _slice() -> tuple[int, int] | None:
    """[lo, hi) of the ports this process may hand out, or None to fall back to port 0."""
    low = _ephemeral_low()
    if low is None or low - _FLOOR < 1000:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    index = int(worker) if worker.isdigit() else 0
    width = (low - _FLOOR) // max(count, 1)
    lo = _FLOOR + (index % max(count, 1)) * width
    return lo, lo + width


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port on `host` that nothing listens on now and that no outgoing connection will be given."""
    global _cursor
    bounds = _slice()
    if bounds is not None:
        lo, hi = bounds
        with _lock:
            if _cursor is None:
                _cursor = itertools.count(os.getpid() * 7919)
            for _ in range(hi - lo):
                port = lo + next(_cursor) % (hi - lo)
                if _bindable(host, port):
                    return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
