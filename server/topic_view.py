"""The handlers' view of topics: quick synchronous look-ups over the log manager, creation is async.

It also holds the one internal topic, `__consumer_offsets`. Kafka keeps committed offsets and group metadata
there and lists it in Metadata as internal; clients rely on that (`exclude.internal.topics`, tools that hide
internal topics, consumers that must never auto-create it). groupcoord keeps offsets in SQLite, so the topic
has no log here: it is a reserved name that Metadata lists (is_internal, `offsets.topic.num.partitions`
partitions, a topic id derived from the cluster id so that it is stable across restarts) and that Produce,
CreateTopics, DeleteTopics and CreatePartitions refuse as Kafka does for internal topics.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

from groupcoord.server.log.errors import LogError
from groupcoord.server.log.manager import LogManager
from groupcoord.server.log.topics import TopicInfo, validate_topic_name

OFFSETS_TOPIC = "__consumer_offsets"
_ID_NAMESPACE = uuid.UUID("6f9b3c1e-2d4a-4b8e-9c71-0a5e3f2d1b60")


def valid_topic_name(name: str) -> bool:
    """Kafka's rule: 1-249 of [a-zA-Z0-9._-], and not "." or ".."."""
    try:
        validate_topic_name(name)
    except LogError:
        return False
    return True


def offsets_topic_id(cluster_id: str) -> uuid.UUID:
    """A stable id for `__consumer_offsets` in this cluster, of the kind Kafka hands out (never the zero or
    reserved ids, never one whose base64 form starts with '-')."""
    salt = 0
    while True:
        u = uuid.uuid5(_ID_NAMESPACE, f"{cluster_id}/{OFFSETS_TOPIC}/{salt}")
        if u.int > 1 and not base64.urlsafe_b64encode(u.bytes).startswith(b"-"):
            return u
        salt += 1


class Topics:
    def __init__(self, logs: LogManager, offsets_partitions: int = 50, cluster_id: str = "") -> None:
        self.logs = logs
        self.offsets_topic = TopicInfo(OFFSETS_TOPIC, offsets_topic_id(cluster_id), offsets_partitions)
        #: called with the name of every topic this object creates (the configs room applies its defaults)
        self.on_created: Callable[[TopicInfo], None] | None = None

    def valid_name(self, name: str) -> bool:
        return valid_topic_name(name)

    @staticmethod
    def is_internal(name: str | None) -> bool:
        return name == OFFSETS_TOPIC

    def get(self, name: str) -> TopicInfo | None:
        if name == OFFSETS_TOPIC:
            return self.offsets_topic
        return self.logs.topic(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        if topic_id == self.offsets_topic.topic_id:
            return self.offsets_topic
        return self.logs.topic_by_id(topic_id)

    def names(self) -> list[str]:
        names = list(self.logs.topics())
        if OFFSETS_TOPIC not in names:
            names.append(OFFSETS_TOPIC)
        return names

    def version(self) -> object:
        """A value that changes whenever a topic is created, grown or deleted (`LogManager.topics_token`):
        while it is equal, nothing changed (the consumer groups' metadata hash, issue 28)."""
        return self.logs.topics_token()

    def has_partition(self, name: str, partition: int) -> bool:
        info = self.get(name)
        return info is not None and 0 <= partition < info.partitions

    async def create(self, name: str, partitions: int) -> TopicInfo | None:
        """Create if missing; None when the name is refused (a race with another creator is fine)."""
        if name == OFFSETS_TOPIC:
            return self.offsets_topic
        try:
            await self.logs.create_topic(name, partitions)
        except LogError:
            return self.logs.topic(name)
        info = self.logs.topic(name)
        if info is not None and self.on_created is not None:
            self.on_created(info)
        return info
