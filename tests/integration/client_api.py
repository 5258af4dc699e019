"""The client-driver interface of the shared group scenarios (`test_group_scenarios.py`): what a scenario asks
of a client library, whatever the library. `clients.py` lists the drivers that implement it.

A driver makes consumers (`Member`s) and an admin (`GroupAdmin`) and says what its client can show: a member's
generation and member id (None where the client hides them), commit metadata, the admin's fields (None where
the client's result lacks one). Scenarios check the server's side with the same raw tools for every client
(DescribeGroups over a raw connection, the event journal, offsets fetched by kafka-python's admin).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

Partitions = frozenset[tuple[str, int]]
TopicPartitionKey = tuple[str, int]


class Member(Protocol):
    """One consumer of a group, as the scenarios see it."""

    def owned(self) -> Partitions: ...

    def generation(self) -> int | None:
        """The generation the client holds (None: the client does not expose it)."""

    def member_id(self) -> str | None:
        """The member id the client holds (None: the client does not expose it)."""

    def error(self) -> BaseException | None:
        """The last error the client raised while polling (None: none, or not observable)."""

    def commit(self, offsets: dict[TopicPartitionKey, tuple[int, str]]) -> None:
        """Commit (offset, metadata) per partition, synchronously."""

    def committed(self, tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, tuple[int, str | None]]:
        """(offset, metadata) per partition; metadata None where the client does not return it."""

    def close(self) -> None:
        """Close the consumer (a dynamic member sends LeaveGroup; a static one does not). Idempotent."""


@dataclass
class Listed:
    """One ListGroups entry; a field the client does not show is None."""

    protocol_type: str | None
    state: str | None
    simple: bool | None


@dataclass
class DescribedMember:
    client_id: str | None
    partitions: set[TopicPartitionKey] | None
    topics: list[str] | None  # the subscription, from the member metadata


@dataclass
class Described:
    error: int
    state: str
    protocol_type: str | None
    assignor: str
    members: list[DescribedMember] = field(default_factory=list)


class GroupAdmin(Protocol):
    def list_groups(self) -> dict[str, Listed]: ...

    def describe(self, group: str) -> Described: ...

    def delete(self, *groups: str) -> dict[str, str]:
        """Per group: "ok", "non_empty" or "not_found" (anything else: the client's own error, as text)."""

    def close(self) -> None: ...


class GroupClient(Protocol):
    """A client library as a scenario drives it."""

    name: str
    #: the assignor the client's consumers choose by default (what DescribeGroups shows as the protocol)
    default_assignor: str

    def child_command(self, bootstrap: str, topic: str, group: str, session_ms: int) -> list[str]:
        """A command line running one consumer in its own process: it prints "assigned" once it owns
        partitions, then polls until killed."""

    def create_topic(self, bootstrap: str, name: str, partitions: int) -> None: ...

    def consumer(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        *,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
        instance: str | None = None,
        client_id: str | None = None,
    ) -> Member: ...

    def admin(self, bootstrap: str) -> GroupAdmin: ...

    def close(self) -> None:
        """Release what the driver holds (aiokafka's loop thread)."""
