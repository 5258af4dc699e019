"""A coordinator on the test's own event loop: starts in milliseconds, controlled by direct calls.

Use it with asyncio clients (aiokafka). A blocking client (kafka-python, confluent-kafka) would block the
loop the server runs on: use the subprocess mode (`groupcoord.testing.remote`) for those.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Unpack

from groupcoord.server.broker import Broker
from groupcoord.server.config import ServerConfig
from groupcoord.server.control import Control, GroupView
from groupcoord.server.control.control import EventStream
from groupcoord.server.control.faults import Fault, FaultSpec, Recorded

# what a test wants unless it says otherwise: no 3 s wait before the first rebalance, short sessions allowed
TEST_DEFAULTS: dict[str, object] = {
    "group_initial_rebalance_delay_ms": 0,
    "group_min_session_timeout_ms": 1000,
    "storage": "memory",
    "journal": False,
    "log_level": "warning",
}


class GroupCoord:
    """A running coordinator and its controls (the same operations the HTTP endpoint offers)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.control: Control = broker.controls()
        self.host = broker.config.host
        self.port = broker.port

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.broker.config.data_dir

    def now_ms(self) -> int:
        return self.control.now_ms()

    async def advance(self, ms: int) -> int:
        """Move the virtual clock; the timers due fire in deadline order and their effects complete."""
        return await self.control.advance(ms)

    def describe(self, group_id: str) -> GroupView:
        return self.control.describe(group_id)

    async def wait_group(
        self,
        group_id: str,
        state: str | None = "Stable",
        members: int | None = None,
        generation: int | None = None,
        timeout: float = 10.0,
    ) -> GroupView:
        return await self.control.wait_group(group_id, state, members, generation, timeout)

    def events(self, group_id: str) -> EventStream:
        return self.control.events(group_id)

    def fault(self, *apis: str | int, **spec: Unpack[FaultSpec]) -> Fault:
        """See `Control.fault`; `hold=True` parks the requests until `fault.release()`."""
        return self.control.fault(*apis, **spec)

    def max_version(self, api: str | int, max_version: int | None) -> None:
        """See `Control.max_version`: pretend to be a broker that speaks `api` only up to `max_version`."""
        self.control.max_version(api, max_version)

    def coordinator_unavailable(
        self, for_ms: int, error: str | int = "COORDINATOR_NOT_AVAILABLE", group: str | None = None
    ) -> Fault:
        return self.control.coordinator_unavailable(for_ms, error, group)

    def clear_faults(self) -> None:
        self.control.clear_faults()

    async def expire_member(self, group_id: str, member_id: str) -> None:
        await self.control.expire_member(group_id, member_id)

    async def force_rebalance(self, group_id: str, reason: str = "forced") -> GroupView:
        """See `Control.force_rebalance`: the group goes to PreparingRebalance with `reason` now."""
        return await self.control.force_rebalance(group_id, reason)

    def record(self, on: bool = True) -> None:
        self.control.record(on)

    def recorded(self, api: str | int | None = None, group: str | None = None) -> list[Recorded]:
        return self.control.recorded(api, group)

    async def stop(self) -> None:
        await self.broker.stop()


async def start_groupcoord(data_dir: Path, *, virtual_clock: bool = True, **options: object) -> GroupCoord:
    """Start a coordinator on the running loop, on a free loopback port. `options` are ServerConfig fields,
    i.e. Kafka's config names with underscores (`group_initial_rebalance_delay_ms=3000`, `storage="disk"`)."""
    values = {**TEST_DEFAULTS, **options}
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        data_dir=Path(data_dir),
        virtual_clock=virtual_clock,
        **values,  # type: ignore[arg-type]
    )
    broker = Broker(config)
    await broker.start()
    # advertise the port the OS picked, so Metadata and FindCoordinator send clients back here
    broker.config = dataclasses.replace(config, port=broker.port)
    assert broker.loaded is not None
    await broker.loaded
    return GroupCoord(broker)
