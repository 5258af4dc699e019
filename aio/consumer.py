"""``AIOKafkaConsumer``: aiokafka's consumer with Java's ``group.protocol`` switch.

``group_protocol="classic"`` (the default) is aiokafka unchanged: JoinGroup/SyncGroup/Heartbeat with the
client-side ``partition_assignment_strategy``. ``group_protocol="consumer"`` makes the member speak KIP-848's
ConsumerGroupHeartbeat (`groupcoord.aio.coordinator`): the broker assigns (``group_remote_assignor``:
``"uniform"``, ``"range"`` or None for the broker's default), and the client reconciles. Everything else —
fetching, ``seek*``, ``pause``, ``commit()``, ``async for`` — stays aiokafka's.
"""

from __future__ import annotations

from typing import Any

from aiokafka.consumer.consumer import AIOKafkaConsumer as _AIOKafkaConsumer
from aiokafka.consumer.fetcher import Fetcher

from groupcoord.aio.coordinator import ConsumerProtocolCoordinator

GROUP_PROTOCOLS = ("classic", "consumer")


class AIOKafkaConsumer(_AIOKafkaConsumer):  # type: ignore[misc]
    """aiokafka's consumer plus ``group_protocol`` and ``group_remote_assignor`` (see the module docstring).

    With ``consumer``: ``session_timeout_ms`` and ``heartbeat_interval_ms`` are the broker's (group configs),
    ``partition_assignment_strategy`` is ignored, and a ``group_id`` is required.
    """

    def __init__(
        self,
        *topics: str,
        group_protocol: str = "classic",
        group_remote_assignor: str | None = None,
        **kw: Any,
    ) -> None:
        protocol = group_protocol.lower()
        if protocol not in GROUP_PROTOCOLS:
            raise ValueError(f"group_protocol must be one of {GROUP_PROTOCOLS}, not {group_protocol!r}")
        if group_remote_assignor is not None and protocol != "consumer":
            raise ValueError("group_remote_assignor needs group_protocol='consumer'")
        if protocol == "consumer" and kw.get("group_id") is None:
            raise ValueError("group_protocol='consumer' needs a group_id")
        super().__init__(*topics, **kw)
        self._group_protocol = protocol
        self._group_remote_assignor = group_remote_assignor

    @property
    def group_protocol(self) -> str:
        """``classic`` or ``consumer``, as Java's ``group.protocol``."""
        return self._group_protocol

    @property
    def member_epoch(self) -> int | None:
        """The member epoch of a consumer-protocol member (None for classic)."""
        coordinator = self._coordinator
        return coordinator.member_epoch if isinstance(coordinator, ConsumerProtocolCoordinator) else None

    @property
    def member_id(self) -> str | None:
        """The member id (client-generated for the consumer protocol; None before a classic join)."""
        coordinator = self._coordinator
        return getattr(coordinator, "member_id", None) if coordinator is not None else None

    async def start(self) -> None:
        """As aiokafka's start; with ``consumer`` the KIP-848 member replaces the JoinGroup coordinator."""
        if self._group_protocol == "classic":
            await super().start()
            return
        assert getattr(self, "_fetcher", None) is None, "Did you call `start` twice?"
        await self._client.bootstrap()
        await self._wait_topics()
        self._fetcher = Fetcher(
            self._client,
            self._subscription,
            key_deserializer=self._key_deserializer,
            value_deserializer=self._value_deserializer,
            fetch_min_bytes=self._fetch_min_bytes,
            fetch_max_bytes=self._fetch_max_bytes,
            fetch_max_wait_ms=self._fetch_max_wait_ms,
            max_partition_fetch_bytes=self._max_partition_fetch_bytes,
            check_crcs=self._check_crcs,
            fetcher_timeout=self._consumer_timeout,
            retry_backoff_ms=self._retry_backoff_ms,
            auto_offset_reset=self._auto_offset_reset,
            isolation_level=self._isolation_level,
            client_rack=self._client_rack,
        )
        self._coordinator = ConsumerProtocolCoordinator(
            self._client,
            self._subscription,
            remote_assignor=self._group_remote_assignor,
            group_id=self._group_id,
            group_instance_id=self._group_instance_id,
            heartbeat_interval_ms=self._heartbeat_interval_ms,
            session_timeout_ms=self._session_timeout_ms,
            retry_backoff_ms=self._retry_backoff_ms,
            enable_auto_commit=self._enable_auto_commit,
            auto_commit_interval_ms=self._auto_commit_interval_ms,
            exclude_internal_topics=self._exclude_internal_topics,
            rebalance_timeout_ms=self._rebalance_timeout_ms,
            max_poll_interval_ms=self._max_poll_interval_ms,
        )
        if self._subscription.subscription is not None:
            if self._subscription.partitions_auto_assigned():
                await self._subscription.wait_for_assignment()
            else:
                self._coordinator.start_commit_offsets_refresh_task(
                    self._subscription.subscription.assignment
                )
