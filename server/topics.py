"""The handlers' view of topics: quick synchronous look-ups over the log manager, creation is async."""

from __future__ import annotations

import uuid

from groupcoord.server.log.errors import LogError
from groupcoord.server.log.manager import LogManager
from groupcoord.server.log.topics import TopicInfo, validate_topic_name


def valid_topic_name(name: str) -> bool:
    """Kafka's rule: 1-249 of [a-zA-Z0-9._-], and not "." or ".."."""
    try:
        validate_topic_name(name)
    except LogError:
        return False
    return True


class Topics:
    def __init__(self, logs: LogManager) -> None:
        self.logs = logs

    def valid_name(self, name: str) -> bool:
        return valid_topic_name(name)

    def get(self, name: str) -> TopicInfo | None:
        return self.logs.topic(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self.logs.topic_by_id(topic_id)

    def names(self) -> list[str]:
        return list(self.logs.topics())

    def has_partition(self, name: str, partition: int) -> bool:
        info = self.logs.topic(name)
        return info is not None and 0 <= partition < info.partitions

    async def create(self, name: str, partitions: int) -> TopicInfo | None:
        """Create if missing; None when the name is refused (a race with another creator is fine)."""
        try:
            await self.logs.create_topic(name, partitions)
        except LogError:
            pass
        return self.logs.topic(name)
