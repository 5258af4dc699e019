"""CreateTopics (API key 19), versions 0-7; flexible from v5.

Declared from Kafka's `CreateTopicsRequest.json` / `CreateTopicsResponse.json`.

Request:
- v0: Topics[] {Name, NumPartitions, ReplicationFactor, Assignments[] {PartitionIndex, BrokerIds[]},
  Configs[] {Name, Value}}, timeoutMs.
- v1: adds validateOnly (not ignorable).
- v2-v3: same as v1.
- v4: same layout; NumPartitions/ReplicationFactor may be -1 without assignments (KIP-464).
- v5: first flexible version.
- v6: same as v5 (THROTTLING_QUOTA_EXCEEDED may be returned, KIP-599).
- v7: same as v6.

Response:
- v0: Topics[] {Name, ErrorCode}.
- v1: adds Topics.ErrorMessage.
- v2: adds ThrottleTimeMs (first field).
- v3-v4: same as v2.
- v5: first flexible version; adds Topics.NumPartitions, Topics.ReplicationFactor, Topics.Configs[] {Name,
  Value, ReadOnly, ConfigSource, IsSensitive} and the tagged Topics.TopicConfigErrorCode (tag 0) (KIP-525).
- v6: same as v5.
- v7: adds Topics.TopicId.

The JSON spells two request fields in lower camel case (`timeoutMs`, `validateOnly`); their snake_case names
are the same as for the usual spelling.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, array, f, message, struct


@struct
class CreatableReplicaAssignment:
    partition_index: int = f(INT32, "0+")
    broker_ids: tuple[int, ...] = f(array(INT32), "0+")


@struct
class CreatableTopicConfig:
    name: str = f(STRING, "0+")
    value: str | None = f(STRING, "0+", nullable="0+")


@struct
class CreatableTopic:
    name: str = f(STRING, "0+")
    num_partitions: int = f(INT32, "0+")
    replication_factor: int = f(INT16, "0+")
    assignments: tuple[CreatableReplicaAssignment, ...] = f(array(CreatableReplicaAssignment), "0+")
    configs: tuple[CreatableTopicConfig, ...] = f(array(CreatableTopicConfig), "0+")


@message(19, "request", valid="0-7", flexible="5+")
class CreateTopicsRequest:
    topics: tuple[CreatableTopic, ...] = f(array(CreatableTopic), "0+")
    timeout_ms: int = f(INT32, "0+", default=60000)
    validate_only: bool = f(BOOL, "1+", default=False, ignorable=False)


@struct
class CreatableTopicConfigs:
    name: str = f(STRING, "5+")
    value: str | None = f(STRING, "5+", nullable="5+")
    read_only: bool = f(BOOL, "5+")
    config_source: int = f(INT8, "5+", default=-1, ignorable=True)
    is_sensitive: bool = f(BOOL, "5+")


@struct
class CreatableTopicResult:
    name: str = f(STRING, "0+")
    topic_id: uuid.UUID = f(UUID, "7+", ignorable=True)
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "1+", nullable="0+", ignorable=True)
    topic_config_error_code: int = f(INT16, "5+", tag=0, tagged_versions="5+", ignorable=True)
    num_partitions: int = f(INT32, "5+", default=-1, ignorable=True)
    replication_factor: int = f(INT16, "5+", default=-1, ignorable=True)
    configs: tuple[CreatableTopicConfigs, ...] | None = f(
        array(CreatableTopicConfigs), "5+", nullable="5+", ignorable=True
    )


@message(19, "response", valid="0-7", flexible="5+")
class CreateTopicsResponse:
    throttle_time_ms: int = f(INT32, "2+", ignorable=True)
    topics: tuple[CreatableTopicResult, ...] = f(array(CreatableTopicResult), "0+")
