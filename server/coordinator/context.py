"""What every part of the coordinator shard shares while one operation runs: the config, the clock reading
and the `Effects` being built, plus the journal-event and timer-key vocabulary.

The shard (`shard.py`) composes a group manager and an offset manager the way Kafka's
`GroupCoordinatorShard` composes `GroupMetadataManager` and `OffsetMetadataManager`. Both managers append to
the same `Effects` during one call, so they share one `OperationContext`; whoever starts an operation (a
public method or an `after_persist` callback) calls `begin(now_ms)` first.
"""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.group import ClassicGroup, Member
from groupcoord.server.coordinator.types import CoordinatorConfig, Effects

NONE = int(ErrorCode.NONE)
#: Error returned when a durable write fails. The actor only reports ok/failed; a failed or timed-out
#: `__consumer_offsets` write maps to COORDINATOR_NOT_AVAILABLE in Kafka (spec §2.12).
PERSIST_ERROR = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)

#: every journal event carries exactly these keys (docs/journal.md; the journal adds `seq`)
EVENT_KEYS = (
    "ts",
    "group",
    "event",
    "generation",
    "state_from",
    "state_to",
    "reason",
    "member_id",
    "previous_member_id",
    "group_instance_id",
    "client_id",
    "members",
    "leader",
    "protocol_type",
    "protocol",
    "skip_assignment",
    "assignment",
    "offsets",
    "member_epoch",
    "duration_ms",
    # share_records (share groups): records acquired, acknowledged (ACCEPT), released, archived by one call
    "acquired",
    "acknowledged",
    "released",
    "archived",
)


def hb_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str, generation: int) -> tuple[str, str, int]:
    return ("sync", group_id, generation)


class OperationContext:
    """The config plus the current operation's time and `Effects`, shared by the managers of one shard."""

    def __init__(self, config: CoordinatorConfig) -> None:
        self.config = config
        self.fx = Effects()
        self.now = 0

    def begin(self, now_ms: int) -> Effects:
        """Start an operation: later effects go to a fresh `Effects`, which is returned."""
        self.now = now_ms
        self.fx = Effects()
        return self.fx

    def event(self, g: ClassicGroup, event: str, **fields: object) -> None:
        """Append a journal event carrying every `EVENT_KEYS` field (unset ones None)."""
        ev = dict.fromkeys(EVENT_KEYS)
        ev["ts"] = self.now
        ev["group"] = g.group_id
        ev["event"] = event
        ev["generation"] = g.generation_id
        ev["members"] = len(g.members)
        ev["leader"] = g.leader_id
        ev["protocol_type"] = g.protocol_type
        ev["protocol"] = g.protocol_name
        ev.update(fields)
        self.fx.event(ev)

    def member_event(
        self, g: ClassicGroup, event: str, m: Member, reason: str | None, **fields: object
    ) -> None:
        self.event(
            g,
            event,
            reason=reason,
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            **fields,
        )
