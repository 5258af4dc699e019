"""DeleteRecords (21) v0-v2: move partitions' log start offsets forward (Kafka's `deleteRecords`).

Per partition, as Kafka's `ReplicaManager.deleteRecordsOnLocalLog` answers: unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION, an offset above the high watermark (or negative other than -1, "up to the high
watermark") is OFFSET_OUT_OF_RANGE, a topic whose cleanup.policy lacks `delete` (including the internal
`__consumer_offsets`, which is compacted) is POLICY_VIOLATION. On success the low watermark is the new log start
offset, already durable; segments wholly below it are removed by a retention pass started at once. With one
replica there is nothing to wait for, so `timeout_ms` is not used.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from groupcoord.server.apis import authz_admin
from groupcoord.server.apis.declaration import Api

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext


def delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> Any:
    return asyncio.ensure_future(_delete_records(ctx, req))


async def _delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    logs = ctx.services.logs
    internal = ctx.services.topics.is_internal
    results = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if internal(t.name):
                code, low = ErrorCode.POLICY_VIOLATION, -1
            else:
                code, low = await logs.delete_records(t.name, p.partition_index, p.offset)
            parts.append(
                DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=low, error_code=code
                )
            )
        results.append(DeleteRecordsTopicResult(name=t.name, partitions=tuple(parts)))
    return DeleteRecordsResponse(topics=tuple(results))


APIS = (Api(key=ApiKey.DELETE_RECORDS, handler=delete_records, check=authz_admin.delete_records),)
