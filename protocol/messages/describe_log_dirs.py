"""DescribeLogDirs (API key 35), versions 1-5, flexible from v2, from Kafka's `DescribeLogDirs*.json`.

Version 0 is gone from Kafka 4 (KIP-896), so our range starts at 1 as the broker's does.
- v1: as v0 (the response's ThrottleTimeMs may mean the request was throttled).
- v2: first flexible version.
- v3: the response gains a top-level ErrorCode (CLUSTER_AUTHORIZATION_FAILED goes there).
- v4: each result gains TotalBytes and UsableBytes of the volume (KIP-827).
- v5: each result gains IsCordoned (KIP-1066).
Request Topics null means every partition of the node.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class DescribableLogDirTopic:
    topic: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@message(35, "request", valid="1-5", flexible="2+")
class DescribeLogDirsRequest:
    topics: tuple[DescribableLogDirTopic, ...] | None = f(array(DescribableLogDirTopic), "0+", nullable="0+")


@struct
class DescribeLogDirsPartition:
    partition_index: int = f(INT32, "0+")
    partition_size: int = f(INT64, "0+")
    offset_lag: int = f(INT64, "0+")
    is_future_key: bool = f(BOOL, "0+")


@struct
class DescribeLogDirsTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[DescribeLogDirsPartition, ...] = f(array(DescribeLogDirsPartition), "0+")


@struct
class DescribeLogDirsResult:
    error_code: int = f(INT16, "0+")
    log_dir: str = f(STRING, "0+")
    topics: tuple[DescribeLogDirsTopic, ...] = f(array(DescribeLogDirsTopic), "0+")
    total_bytes: int = f(INT64, "4+", default=-1, ignorable=True)
    usable_bytes: int = f(INT64, "4+", default=-1, ignorable=True)
    is_cordoned: bool = f(BOOL, "5+", default=False, ignorable=True)


@message(35, "response", valid="1-5", flexible="2+")
class DescribeLogDirsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "3+", ignorable=True)
    results: tuple[DescribeLogDirsResult, ...] = f(array(DescribeLogDirsResult), "0+")
