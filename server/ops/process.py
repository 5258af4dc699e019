"""Metrics about the server process rather than its groups: build, network, event-loop lag.

prometheus-client's `ProcessCollector` (`process_*`: CPU, memory, open files, start time) and
`PlatformCollector` (`python_info`) are registered next to these by `Ops`. Everything here is read at scrape
time from counters the network layer bumps once per frame (`ConnectionGuard.bytes_in/bytes_out`) or from the
lag probe, one timer callback a second; nothing runs per request.
"""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Iterator
from importlib import metadata
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from groupcoord.server.ops.metrics import Histogram

#: Kafka's `socket-server-metrics` group under jmx_exporter's stock `kafka.server<type=...>` rule
SOCKET = "kafka_server_socket_server_metrics_"
#: event-loop lag buckets (seconds): a healthy loop answers its timer within a millisecond
LOOP_LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
LOOP_LAG_INTERVAL_S = 1.0


class NetworkCounters(Protocol):
    """What the network layer keeps (`server.net.network.ConnectionGuard`)."""

    total: int
    bytes_in: int
    bytes_out: int


class ProcessSource(Protocol):
    """The broker, as far as these metrics read it: its connection guard once the listeners are open."""

    guard: NetworkCounters | None


def build_version() -> str:
    try:
        return metadata.version("groupcoord")
    except metadata.PackageNotFoundError:
        return "unknown"


class LoopLag:
    """How late the event loop runs a timer: a callback scheduled every second records its delay.

    A scrape, a long state load or a slow handler that blocks the loop shows here; clients see the same
    delay on every request (heartbeats included, so a lag near session.timeout.ms evicts members).
    """

    def __init__(self, interval_s: float = LOOP_LAG_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.hist = Histogram(LOOP_LAG_BUCKETS)
        self.last = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._arm()

    def _arm(self) -> None:
        assert self._loop is not None
        self._due = self._loop.time() + self.interval_s
        self._handle = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        self.last = max(self._loop.time() - self._due, 0.0)
        self.hist.observe(self.last)
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class ProcessMetrics:
    """Build info, connections and bytes, event-loop lag."""

    def __init__(self, source: ProcessSource, lag: LoopLag) -> None:
        self.source = source
        self.lag = lag
        self.version = build_version()
        self.python = platform.python_version()

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "groupcoord_build_info",
            "Always 1; labels: groupcoord and Python versions",
            labels=("version", "python"),
        )
        info.add_metric((self.version, self.python), 1)
        yield info
        guard = getattr(self.source, "guard", None)
        conns = GaugeMetricFamily(SOCKET + "connection_count", "Open Kafka-protocol client connections")
        received = CounterMetricFamily(
            SOCKET + "incoming_byte", "Bytes of Kafka request frames read (size prefix included)"
        )
        sent = CounterMetricFamily(
            SOCKET + "outgoing_byte", "Bytes of Kafka response frames written (size prefix included)"
        )
        if guard is not None:
            conns.add_metric((), guard.total)
            received.add_metric((), guard.bytes_in)
            sent.add_metric((), guard.bytes_out)
        yield conns
        yield received
        yield sent
        lag = HistogramMetricFamily(
            "groupcoord_event_loop_lag_seconds",
            f"How late the event loop ran a timer due every {self.lag.interval_s:g} s",
        )
        lag.add_metric((), self.lag.hist.buckets(), self.lag.hist.total)
        yield lag
        last = GaugeMetricFamily("groupcoord_event_loop_lag_last_seconds", "The latest event-loop lag sample")
        last.add_metric((), self.lag.last)
        yield last
