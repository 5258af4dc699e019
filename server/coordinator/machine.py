"""The coordinator's historical entry point, kept so `GroupStateMachine` imports keep working.

The state machine is `GroupCoordinatorShard` (`shard.py`), composed of a `GroupMetadataManager`
(`group_manager.py` + `membership.py`) and an `OffsetMetadataManager` (`offset_manager.py`), as in Kafka.
"""

from groupcoord.server.coordinator.context import EVENT_KEYS, PERSIST_ERROR, hb_key, join_key, sync_key
from groupcoord.server.coordinator.shard import GroupCoordinatorShard

GroupStateMachine = GroupCoordinatorShard

__all__ = [
    "EVENT_KEYS",
    "PERSIST_ERROR",
    "GroupCoordinatorShard",
    "GroupStateMachine",
    "hb_key",
    "join_key",
    "sync_key",
]
