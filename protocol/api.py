"""The API keys groupcoord speaks and the version range our codec supports for each.

`SUPPORTED` is what the codec speaks and what ApiVersions advertises, per API the server has a handler for. It
is derived from the `valid=` range each message declares (protocol/messages), so widening a range means
declaring the new version there; there is no second table to keep in step. The one exception is Kafka's own:
`ADVERTISED_MIN` (Produce from v0, KAFKA-18659).
"""

from __future__ import annotations

from enum import IntEnum

from groupcoord.protocol.messages import REQUESTS, RESPONSES


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_QUORUM = 55
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


def _declared_ranges() -> dict[ApiKey, tuple[int, int]]:
    """(min, max) per API, read from the request declaration; its response must declare the same range."""
    out: dict[ApiKey, tuple[int, int]] = {}
    for key in ApiKey:
        req, resp = REQUESTS[key].VALID_VERSIONS, RESPONSES[key].VALID_VERSIONS  # type: ignore[attr-defined]
        if (req.lo, req.hi) != (resp.lo, resp.hi):
            raise RuntimeError(f"{key.name}: request declares {req}, response {resp}")
        out[key] = (req.lo, req.hi)
    return out


#: (min, max) version our codec handles, per API: derived from the message declarations, never typed here.
SUPPORTED: dict[ApiKey, tuple[int, int]] = _declared_ranges()

#: The one place ApiVersions advertises a lower minimum than the codec speaks. Kafka 4.0 removed Produce v0-2
#: but, because librdkafka before confluentinc/librdkafka#4956 decides from Produce's minimum whether the
#: broker takes compressed batches (it sends gzip/lz4/snappy only when v0-2 are in range), Kafka 4.x still
#: advertises Produce from v0 (KAFKA-18659, `ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION`) and closes
#: the connection of a request at v0-2 as any version it does not speak (the dispatcher does the same).
ADVERTISED_MIN: dict[ApiKey, int] = {ApiKey.PRODUCE: 0}


def advertised(key: ApiKey) -> tuple[int, int]:
    """(min, max) that ApiVersions advertises for `key`: the codec's range, widened by `ADVERTISED_MIN`."""
    lo, hi = SUPPORTED[key]
    return (min(lo, ADVERTISED_MIN.get(key, lo)), hi)
