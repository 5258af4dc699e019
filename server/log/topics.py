"""Topic names, ids and the persisted topic registry (`<data-dir>/topics/topics.json`).

Name rules are Kafka's (`org.apache.kafka.common.internals.Topic`): 1..249 characters from
`[a-zA-Z0-9._-]`, not "." or "..", and no collision with an existing topic once '.' and '_' are treated as
the same character (Kafka refuses those because the names clash in metric names).
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.errors import LogError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    # topic-level configs given at creation (CreateTopics), kept as given; nothing reads them yet
    configs: tuple[tuple[str, str], ...] = ()


def validate_topic_name(name: str) -> None:
    """Raise INVALID_TOPIC_EXCEPTION for names Kafka rejects."""
    if not name:
        raise LogError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is empty")
    if name in (".", ".."):
        raise LogError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise LogError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name is longer than {MAX_NAME_LENGTH} characters"
        )
    if not _LEGAL.fullmatch(name):
        raise LogError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters outside [a-zA-Z0-9._-]",
        )


def collision_key(name: str) -> str:
    return name.replace(".", "_")


def new_topic_id() -> uuid.UUID:
    """A random id, avoiding what Kafka never hands out: the zero/reserved ids and ids whose base64 form
    starts with '-' (they would read as a command-line flag)."""
    while True:
        u = uuid.uuid4()
        if u.int > 1 and not base64.urlsafe_b64encode(u.bytes).startswith(b"-"):
            return u


def load_registry(path: Path) -> dict[str, TopicInfo]:
    if not path.exists():
        return {}
    raw = json.loads(path.read_text())
    return {
        name: TopicInfo(
            name,
            uuid.UUID(t["id"]),
            int(t["partitions"]),
            tuple((str(k), str(v)) for k, v in t.get("configs", {}).items()),
        )
        for name, t in raw["topics"].items()
    }


def save_registry(path: Path, topics: dict[str, TopicInfo]) -> None:
    """Atomically replace the registry: temp file, fsync, rename, fsync the directory."""
    doc = {
        "version": 1,
        "topics": {
            t.name: {
                "id": str(t.topic_id),
                "partitions": t.partitions,
                **({"configs": dict(t.configs)} if t.configs else {}),
            }
            for t in topics.values()
        },
    }
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
