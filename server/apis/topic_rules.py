"""Kafka's checks on CreateTopics / CreatePartitions input that need no storage: manual replica assignments
and topic configs, with Kafka's error codes and messages (`ReplicationControlManager.createTopic`,
`validateManualPartitionAssignment`, `createPartitions`; `LogConfig.validateNames`).

groupcoord is one broker, so a manual assignment is valid when every partition lists exactly this node once:
that is what a one-broker Kafka accepts (kafka-python's `create_partitions` test sends it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.configs.manager import check_topic_configs

Refusal = tuple[ErrorCode, str]


def check_configs(
    configs: Iterable[tuple[str, str | None]],
) -> tuple[tuple[tuple[str, str], ...], Refusal | None]:
    """The configs to keep, in request order, and Kafka's refusal if any: a null value is INVALID_REQUEST, an
    unknown name INVALID_CONFIG ("Unknown topic config name: x"), a bad value INVALID_CONFIG with
    `ConfigDef`'s message (server/configs)."""
    kept: dict[str, str] = {}
    for name, value in configs:
        if value is None:
            return (), (ErrorCode.INVALID_REQUEST, f"Null value not supported for topic configs: {name}")
        kept[name] = value
    refusal = check_topic_configs(kept)
    if refusal is not None:
        return (), refusal
    return tuple(kept.items()), None


def _check_replicas(broker_ids: Sequence[int], node_id: int, replication_factor: int | None) -> str | None:
    """`validateManualPartitionAssignment` with this node as the only registered broker."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker in sorted(broker_ids):
        if broker != node_id:
            return (
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."
            )
        if broker == previous:
            return f"The manual partition assignment includes the broker {broker} more than once."
        previous = broker
    if replication_factor is not None and len(broker_ids) != replication_factor:
        return (
            f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but "
            f"this is not consistent with previous partitions, which have {replication_factor} replica(s)."
        )
    return None


def check_create_assignments(
    num_partitions: int,
    replication_factor: int,
    assignments: Sequence[tuple[int, Sequence[int]]],
    node_id: int,
) -> int | Refusal:
    """The partition count of a CreateTopics topic with manual `assignments` (partition, brokers), or
    Kafka's refusal."""
    if replication_factor != -1:
        return (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        )
    if num_partitions != -1:
        return (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    seen: set[int] = set()
    factor: int | None = None
    for partition, brokers in assignments:
        if partition in seen:
            return (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {partition}",
            )
        problem = _check_replicas(brokers, node_id, factor)
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
        factor = len(brokers)
        seen.add(partition)
    if seen != set(range(len(seen))):
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return len(seen)


def check_partition_assignments(
    additional: int, assignments: Sequence[Sequence[int]], node_id: int
) -> Refusal | None:
    """Kafka's checks on CreatePartitions assignments for `additional` new partitions of a topic whose
    replication factor is 1."""
    if len(assignments) != additional:
        return (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
            "assignment(s) were specified.",
        )
    for brokers in assignments:
        problem = _check_replicas(brokers, node_id, 1)
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    return None
