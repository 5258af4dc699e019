"""The steady-state ConsumerGroupHeartbeat (issue 28): when a heartbeat can change nothing but the member's
session timer, and how the group's metadata hash is known without recomputing it.

Most heartbeats of a consumer group are of this kind: a member that owns its target assignment at the
group's assignment epoch sends its member id and epoch and leaves every "unchanged" field null (Java 4.3 and
librdkafka send the subscription, assignor, rebalance timeout and owned partitions only when they change).
`is_steady` is the one decision both the manager's full path (`ConsumerGroupManager._heartbeat`, which
returns early on it) and the runtime's fast lane (`ConsumerGroupManager.steady_heartbeat`) take, so the
machine stays the single authority; every condition is one under which the full computation would write no
record, bump no epoch, compute no assignment, reconcile nothing and journal nothing.

The metadata hash (KIP-1101's role: any change of a subscribed topic bumps the group epoch) is a function of
the group's subscribed names and of the topics. Kafka recomputes it when the metadata image changes; here a
heartbeat recomputes it unless `hash_basis` still holds: the same topic registry version (`TopicImage.version()`,
a number the log manager moves on every topic change), the same member indexes (`index_changes`), the same
group epoch and hash. An image without `version` (a test's) never takes the shortcut.
"""

from __future__ import annotations

from groupcoord.server.coordinator.modern.consumer.api import TopicImage
from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.member import STABLE, ConsumerGroupMember

#: what Java's `String.trim()` strips: every character up to U+0020 (as the manager's `blank`)
_TRIMMED = "".join(chr(c) for c in range(33))


def topics_version(topics: TopicImage) -> object | None:
    """The image's registry version (a value that changes on every topic change), or None for an image that
    has none."""
    version = getattr(topics, "version", None)
    return None if version is None else version()


def basis(g: ConsumerGroup, version: object | None) -> tuple[object, ...] | None:
    """What the group's `metadata_hash`, just computed against `version`, depends on."""
    return None if version is None else (version, g.index_changes, g.group_epoch, g.metadata_hash)


def is_steady(
    g: ConsumerGroup,
    m: ConsumerGroupMember,
    member_epoch: int,
    instance_id: str | None,
    rack_id: str | None,
    rebalance_timeout_ms: int,
    client_id: str,
    client_host: str,
    version: object | None,
) -> bool:
    """Whether a heartbeat of member `m` (found by its member id) in `g`, with a null subscription, regex,
    assignor and owned partitions and these other fields, changes nothing but the member's session timer.

    O(1): no walk over the members or the topics."""
    b = g.hash_basis
    return (
        member_epoch > 0
        and member_epoch == m.member_epoch  # an older epoch is the fencing check's (full path)
        and m.state == STABLE
        and member_epoch == g.assignment_epoch  # reconciled: nothing to reconcile
        and g.group_epoch <= g.assignment_epoch  # no target assignment pending
        and b is not None
        and version is not None
        and b[0] == version  # the topics the hash was computed against
        and b[1] == g.index_changes  # the subscribed names it was computed from
        and b[2] == g.group_epoch
        and b[3] == g.metadata_hash
        and g.resolved is not None
        and not g.resolved  # no regex anywhere: nothing to resolve
        and not g.regexes_with(None, None)
        # the request's own checks (`validate`) and the member's metadata: unchanged
        and bool(g.group_id.strip(_TRIMMED))
        and bool(m.member_id.strip(_TRIMMED))
        and (
            instance_id is None
            or (bool(instance_id.strip(_TRIMMED)) and g.static_members.get(instance_id) == m.member_id)
        )
        and (rack_id is None or (rack_id == m.rack_id and bool(rack_id.strip(_TRIMMED))))
        and (rebalance_timeout_ms == -1 or rebalance_timeout_ms == m.rebalance_timeout_ms)
        and client_id == m.client_id
        and client_host == m.client_host
        and m.classic is None  # a consumer-protocol heartbeat clears a migrated member's classic metadata
    )  # fmt: skip
