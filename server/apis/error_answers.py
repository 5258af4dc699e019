"""Whole requests answered with one error everywhere (Kafka's `getErrorResponse`): used by the handlers, their
ACL checks and the answers while loading alike, so none of those imports another for it."""

from __future__ import annotations

from groupcoord.protocol.messages import elect_leaders as el
from groupcoord.protocol.messages import offset_commit as oc


def commit_errors(req: oc.OffsetCommitRequest, error: int) -> oc.OffsetCommitResponse:
    """The same error for every partition of the request (v0, and while the state loads)."""
    return oc.OffsetCommitResponse(
        topics=tuple(
            oc.OffsetCommitResponseTopic(
                name=t.name,
                topic_id=t.topic_id,
                partitions=tuple(
                    oc.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                    for p in t.partitions
                ),
            )
            for t in req.topics
        )
    )


def elect_error(req: el.ElectLeadersRequest, code: int, message: str | None) -> el.ElectLeadersResponse:
    """Kafka's `ElectLeadersRequest.getErrorResponse`: the error at the top and on every asked partition."""
    results = tuple(
        el.ReplicaElectionResult(
            topic=t.topic,
            partition_result=tuple(
                el.ElectLeadersPartitionResult(partition_id=p, error_code=code, error_message=message)
                for p in t.partitions
            ),
        )
        for t in req.topic_partitions or ()
    )
    return el.ElectLeadersResponse(error_code=code, replica_election_results=results)
