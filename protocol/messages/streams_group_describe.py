"""StreamsGroupDescribe (API key 89, KIP-1071), versions 0-1, flexible in every version.

Declared from Kafka 4.4's `StreamsGroupDescribeRequest.json` / `StreamsGroupDescribeResponse.json`.

Version notes: v1 (KIP-1331, KIP-1357) adds the request's IncludeTopologyDescription and the response's
TopologyDescription, TopologyDescriptionStatus (0 NOT_REQUESTED, 1 NOT_STORED, 2 ERROR, 3 AVAILABLE) and
AssignorName (nullable, ignorable). The topology described is the configured one (derived partition counts).
"""

from __future__ import annotations

from groupcoord.protocol.messages.streams_group_heartbeat import (
    Endpoint,
    KeyValue,
    TaskIds,
    TaskOffset,
    TopicInfo,
)
from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, array, f, message, struct

__all__ = ["Endpoint", "KeyValue", "TaskIds", "TaskOffset", "TopicInfo"]


@message(89, "request", valid="0-1", flexible="0+")
class StreamsGroupDescribeRequest:
    group_ids: tuple[str, ...] = f(array(STRING), "0+")
    include_authorized_operations: bool = f(BOOL, "0+")
    include_topology_description: bool = f(BOOL, "1+", default=False)


@struct
class DescribedSubtopology:
    subtopology_id: str = f(STRING, "0+")
    source_topics: tuple[str, ...] = f(array(STRING), "0+")
    repartition_sink_topics: tuple[str, ...] = f(array(STRING), "0+")
    state_changelog_topics: tuple[TopicInfo, ...] = f(array(TopicInfo), "0+")
    repartition_source_topics: tuple[TopicInfo, ...] = f(array(TopicInfo), "0+")


@struct
class DescribedTopology:
    epoch: int = f(INT32, "0+")
    subtopologies: tuple[DescribedSubtopology, ...] | None = f(
        array(DescribedSubtopology), "0+", nullable="0+", default=None
    )


@struct
class Assignment:
    active_tasks: tuple[TaskIds, ...] = f(array(TaskIds), "0+")
    standby_tasks: tuple[TaskIds, ...] = f(array(TaskIds), "0+")
    warmup_tasks: tuple[TaskIds, ...] = f(array(TaskIds), "0+")


@struct
class DescribedMember:
    member_id: str = f(STRING, "0+")
    member_epoch: int = f(INT32, "0+")
    instance_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    rack_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    client_id: str = f(STRING, "0+")
    client_host: str = f(STRING, "0+")
    topology_epoch: int = f(INT32, "0+")
    process_id: str = f(STRING, "0+")
    user_endpoint: Endpoint | None = f(Endpoint, "0+", nullable="0+", default=None)
    client_tags: tuple[KeyValue, ...] = f(array(KeyValue), "0+")
    task_offsets: tuple[TaskOffset, ...] = f(array(TaskOffset), "0+")
    task_end_offsets: tuple[TaskOffset, ...] = f(array(TaskOffset), "0+")
    assignment: Assignment = f(Assignment, "0+")
    target_assignment: Assignment = f(Assignment, "0+")
    is_classic: bool = f(BOOL, "0+")


@struct
class TopologyDescriptionNode:
    name: str = f(STRING, "1+")
    node_type: int = f(INT8, "1+")
    source_topics: tuple[str, ...] = f(array(STRING), "1+")
    sink_topic: str | None = f(STRING, "1+", nullable="1+", default=None)
    stores: tuple[str, ...] = f(array(STRING), "1+")
    successors: tuple[str, ...] = f(array(STRING), "1+")


@struct
class TopologyDescriptionSubtopology:
    subtopology_id: str = f(STRING, "1+")
    nodes: tuple[TopologyDescriptionNode, ...] = f(array(TopologyDescriptionNode), "1+")


@struct
class TopologyDescriptionGlobalStore:
    source: TopologyDescriptionNode = f(TopologyDescriptionNode, "1+")
    processor: TopologyDescriptionNode = f(TopologyDescriptionNode, "1+")


@struct
class TopologyDescription:
    subtopologies: tuple[TopologyDescriptionSubtopology, ...] = f(array(TopologyDescriptionSubtopology), "1+")
    global_stores: tuple[TopologyDescriptionGlobalStore, ...] = f(array(TopologyDescriptionGlobalStore), "1+")


@struct
class DescribedGroup:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    group_id: str = f(STRING, "0+")
    group_state: str = f(STRING, "0+")
    group_epoch: int = f(INT32, "0+")
    assignment_epoch: int = f(INT32, "0+")
    topology: DescribedTopology | None = f(DescribedTopology, "0+", nullable="0+", default=None)
    members: tuple[DescribedMember, ...] = f(array(DescribedMember), "0+")
    authorized_operations: int = f(INT32, "0+", default=-(2**31))
    topology_description: TopologyDescription | None = f(
        TopologyDescription, "1+", nullable="1+", default=None
    )
    topology_description_status: int = f(INT8, "1+", default=0)
    assignor_name: str | None = f(STRING, "1+", nullable="1+", default=None, ignorable=True)


@message(89, "response", valid="0-1", flexible="0+")
class StreamsGroupDescribeResponse:
    throttle_time_ms: int = f(INT32, "0+")
    groups: tuple[DescribedGroup, ...] = f(array(DescribedGroup), "0+")
