"""Which shard a group belongs to: a stable hash, the same on every node, every run and every Python.

`shard_of(group_id, S) = jump_consistent_hash(u64(blake2b(group_id as UTF-8, 8 bytes), big-endian), S)`.

Why: Kafka uses `abs(groupId.hashCode()) % offsets.topic.num.partitions`; a Java String hash is easy to get
subtly wrong and clusters badly, and Python's `hash()` is salted per process. blake2b is in the standard
library and spreads well; jump consistent hashing (Lamping & Veach, 2014) is what Redpanda uses, so a later
change of S would move only ~1/S of the groups. S is fixed when a cluster is created
(`--offsets-topic-num-partitions`, default 50, Kafka's name for the same thing): every node must agree.
"""

from __future__ import annotations

import functools
import hashlib

_MASK = (1 << 64) - 1


def jump_consistent_hash(key: int, buckets: int) -> int:
    """Lamping & Veach's jump consistent hash of a 64-bit key into [0, buckets)."""
    if buckets < 1:
        raise ValueError("buckets must be at least 1")
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & _MASK
        j = int((b + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return b


@functools.lru_cache(maxsize=1 << 16)
def shard_of(group_id: str, shards: int) -> int:
    """The shard (0..shards-1) owning `group_id` (cached: every group request of a cluster node asks)."""
    digest = hashlib.blake2b(group_id.encode("utf-8"), digest_size=8).digest()
    return jump_consistent_hash(int.from_bytes(digest, "big"), shards)
