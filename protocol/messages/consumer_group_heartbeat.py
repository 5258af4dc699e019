"""ConsumerGroupHeartbeat (API key 68), versions 0-1, flexible in every version (KIP-848).

Version notes: v0 as shipped in Kafka 3.7 (the server may generate the member id when MemberId is "");
v1 SubscribedTopicRegex and a client-generated MemberId (KIP-1082). librdkafka (confluent-kafka 2.16) sends
v1 only; the Java 4.3 consumer sends v1. The Assignment of the response is a nullable struct (int8 marker).
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, STRING, UUID, array, f, message, struct


@struct
class HeartbeatTopicPartitions:
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@message(68, "request", valid="0-1", flexible="0+")
class ConsumerGroupHeartbeatRequest:
    group_id: str = f(STRING, "0+")
    member_id: str = f(STRING, "0+")
    member_epoch: int = f(INT32, "0+")
    instance_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    rack_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    rebalance_timeout_ms: int = f(INT32, "0+", default=-1)
    subscribed_topic_names: tuple[str, ...] | None = f(array(STRING), "0+", nullable="0+", default=None)
    subscribed_topic_regex: str | None = f(STRING, "1+", nullable="1+", default=None)
    server_assignor: str | None = f(STRING, "0+", nullable="0+", default=None)
    topic_partitions: tuple[HeartbeatTopicPartitions, ...] | None = f(
        array(HeartbeatTopicPartitions), "0+", nullable="0+", default=None
    )


@struct
class HeartbeatAssignment:
    topic_partitions: tuple[HeartbeatTopicPartitions, ...] = f(array(HeartbeatTopicPartitions), "0+")


@message(68, "response", valid="0-1", flexible="0+")
class ConsumerGroupHeartbeatResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    member_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    member_epoch: int = f(INT32, "0+")
    heartbeat_interval_ms: int = f(INT32, "0+")
    assignment: HeartbeatAssignment | None = f(HeartbeatAssignment, "0+", nullable="0+", default=None)
