"""StreamsGroupHeartbeat's request checks (Kafka's `throwIfStreamsGroupHeartbeatRequestIsInvalid` and the
topic checks of `KafkaApis.handleStreamsGroupHeartbeat`, spec §2.1)."""

from __future__ import annotations

import re

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.streams.api import StreamsHeartbeatRequest, Topology

E = ErrorCode
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
KAFKA_INTERNAL = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = int(code), message


def _blank(s: str | None) -> bool:
    return s is not None and not s.strip()


def check_topic_names(topology: Topology) -> None:
    names = topology.required_topics()
    internal = sorted(n for n in names if n in KAFKA_INTERNAL)
    if internal:
        raise HeartbeatError(
            E.STREAMS_INVALID_TOPOLOGY,
            f"Use of Kafka internal topics {', '.join(internal)} in a Kafka Streams topology is prohibited.",
        )
    bad = [n for n in names if len(n) > 249 or n in (".", "..") or not _LEGAL.fullmatch(n)]
    if bad:
        raise HeartbeatError(
            E.STREAMS_INVALID_TOPOLOGY, f"Topic names {', '.join(bad)} are not valid topic names."
        )


def validate(req: StreamsHeartbeatRequest) -> None:
    if req.topology is not None:
        for s in req.topology.subtopologies:
            if s.source_topic_regex:
                raise HeartbeatError(
                    E.INVALID_REQUEST, "Regular expressions for source topics are not supported yet."
                )
    if not req.group_id.strip():
        raise HeartbeatError(E.INVALID_REQUEST, "GroupId can't be empty.")
    if not req.member_id.strip():
        raise HeartbeatError(E.INVALID_REQUEST, "MemberId can't be empty.")
    if _blank(req.instance_id):
        raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be empty.")
    if _blank(req.rack_id):
        raise HeartbeatError(E.INVALID_REQUEST, "RackId can't be empty.")
    lists = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise HeartbeatError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        for name, tasks in zip(("ActiveTasks", "StandbyTasks", "WarmupTasks"), lists, strict=True):
            if tasks:
                raise HeartbeatError(E.INVALID_REQUEST, f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            raise HeartbeatError(E.INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
    elif req.member_epoch < -2:
        raise HeartbeatError(
            E.INVALID_REQUEST, f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2."
        )
    elif req.member_epoch == -2 and req.instance_id is None:
        raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif req.member_epoch > 0 and req.topology is not None:
        raise HeartbeatError(E.INVALID_REQUEST, "Topology can only be provided when (re-)joining.")
    if any(t is not None for t in lists) and any(t is None for t in lists):
        raise HeartbeatError(E.INVALID_REQUEST, "If one task-type is non-null, all must be non-null.")
    if req.topology is not None:
        for s in req.topology.subtopologies:
            for c in s.state_changelog_topics:
                if c.partitions != 0:
                    raise HeartbeatError(
                        E.STREAMS_INVALID_TOPOLOGY,
                        f"Changelog topic {c.name} must have an undefined partition count, but it is set to "
                        f"{c.partitions}.",
                    )
