"""DescribeLogDirs (35): this node's one log directory and the size of every partition in it.

As Kafka's `ReplicaManager.describeLogDirs` answers for a broker with one log dir: the directory (here the
data dir's `topics` folder, where the embedded log keeps its partitions), error NONE, and per partition its
size in bytes, offset lag 0 (a single replica: the log end is the high watermark) and is_future false (no
AlterReplicaLogDirs here). Topics null asks for every partition; asked partitions this node does not host
are left out, as Kafka leaves them out. v4+ carries the volume's total and usable bytes (from the file
system; -1, Kafka's "unknown", with in-memory storage, which has no volume). The internal
`__consumer_offsets` is not a log here (the group state lives in the state store), so it is not listed.

The ACL check (DESCRIBE on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED and no results) is in `authz_tools`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from groupcoord.server.apis import authz_tools
from groupcoord.server.apis.declaration import Api

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext


def volume_bytes(directory: Path) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `directory`, or (-1, -1) when it cannot be read."""
    try:
        usage = shutil.disk_usage(directory)
    except OSError:
        return -1, -1
    return usage.total, usage.free


def describe_log_dirs(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    logs = ctx.services.logs
    wanted: dict[str, set[int]] | None = None
    if req.topics is not None:
        wanted = {}
        for t in req.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)
    topics = []
    for name, info in sorted(logs.topics().items()):
        if wanted is not None and name not in wanted:
            continue
        parts = []
        for p in range(info.partitions):
            if wanted is not None and p not in wanted[name]:
                continue
            plog = logs.partition(name, p)
            if plog is None:
                continue
            parts.append(
                DescribeLogDirsPartition(
                    partition_index=p, partition_size=plog.size_bytes, offset_lag=0, is_future_key=False
                )
            )
        if parts:
            topics.append(DescribeLogDirsTopic(name=name, partitions=tuple(parts)))
    directory = logs.root if logs.root is not None else ctx.services.config.data_dir / "topics"
    total, usable = volume_bytes(logs.root) if logs.root is not None else (-1, -1)
    result = DescribeLogDirsResult(
        error_code=ErrorCode.NONE,
        log_dir=str(Path(directory).absolute()),
        topics=tuple(topics),
        total_bytes=total,
        usable_bytes=usable,
    )
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=(result,))


APIS = (Api(key=ApiKey.DESCRIBE_LOG_DIRS, handler=describe_log_dirs, check=authz_tools.describe_log_dirs),)
