"""The topic registry in memory: names, ids and partition counts (the log manager replaces it when present)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def valid_topic_name(name: str) -> bool:
    """Kafka's rule: 1-249 of [a-zA-Z0-9._-], and not "." or ".."."""
    return 0 < len(name) <= 249 and name not in (".", "..") and _LEGAL.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int


class TopicRegistry:
    def __init__(self) -> None:
        self._by_name: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}

    def valid_name(self, name: str) -> bool:
        return valid_topic_name(name)

    def get(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def names(self) -> list[str]:
        return list(self._by_name)

    def create(self, name: str, partitions: int) -> TopicInfo:
        info = self._by_name.get(name)
        if info is None:
            info = TopicInfo(name, uuid.uuid4(), partitions)
            self._by_name[name] = info
            self._by_id[info.topic_id] = info
        return info

    def has_partition(self, name: str, partition: int) -> bool:
        info = self._by_name.get(name)
        return info is not None and 0 <= partition < info.partitions
