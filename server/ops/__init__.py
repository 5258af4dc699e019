"""Operations: Prometheus metrics and health probes on an admin HTTP listener, and `groupcoord groups`.

The server touches this package in three places only: `Ops.request_done` (the dispatcher's observer),
`Ops.on_event` (the runtime's group-event listener) and `Ops.start`/`close` (broker start and stop).
"""

from __future__ import annotations

import asyncio

from prometheus_client import PlatformCollector, ProcessCollector
from prometheus_client.registry import CollectorRegistry

from groupcoord.server.coordinator.records import OffsetRecord
from groupcoord.server.coordinator.types import Effects
from groupcoord.server.ops.http import AdminHttp, ConsoleHandler
from groupcoord.server.ops.metrics import JournalMetrics, RequestMetrics, StateCollector, StateSource
from groupcoord.server.ops.process import LoopLag, ProcessMetrics

__all__ = ["Ops"]


class _Registered:
    """Adapts one of our metric holders to prometheus-client's collector interface."""

    def __init__(self, holder: RequestMetrics | JournalMetrics | ProcessMetrics) -> None:
        self.holder = holder

    def collect(self):  # type: ignore[no-untyped-def]
        return self.holder.collect()


class Ops:
    """Everything the admin listener serves, for one broker."""

    def __init__(
        self, source: StateSource, partition_lag: bool = True, console: ConsoleHandler | None = None
    ) -> None:
        self.source = source
        self.console = console
        self.requests = RequestMetrics()
        self.journal = JournalMetrics()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StateCollector(source, partition_lag))
        self.registry.register(_Registered(self.requests))  # type: ignore[arg-type]
        self.registry.register(_Registered(self.journal))  # type: ignore[arg-type]
        self.loop_lag = LoopLag()
        self.registry.register(_Registered(ProcessMetrics(source, self.loop_lag)))  # type: ignore[arg-type]
        # process_* (CPU seconds, resident/virtual memory, open and max fds, start time) and python_info on *our*
        # registry: the default one is never served
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.http: AdminHttp | None = None
        self.port: int | None = None

    # the dispatcher's observer
    def request_done(self, api_key: int, version: int, response: object, started: float) -> None:
        self.requests.request_done(api_key, version, response, started)

    # the runtime's group-event listener
    def on_event(self, event: dict) -> None:
        self.journal.on_event(event)

    def offsets_expired(self, effects: Effects | None) -> None:
        """Count the offset tombstones of one retention pass (offset-expiration-count)."""
        if effects:
            self.journal.offsets_expired += sum(
                1 for r in effects.records if isinstance(r, OffsetRecord) and r.value is None
            )

    async def start(self, host: str, port: int) -> int:
        self.loop_lag.start(asyncio.get_running_loop())
        self.http = AdminHttp(self.registry, lambda: not self.source.loading, self.console)
        self.port = await self.http.start(host, port)
        return self.port

    async def close(self) -> None:
        self.loop_lag.stop()
        if self.http is not None:
            await self.http.close()
