"""Durable coordinator state (committed offsets, group metadata): the StateStore interface and stores."""

from groupcoord.server.storage.base import StateStore, StorageError, SynchronousStateStore
from groupcoord.server.storage.memory import MemoryStateStore
from groupcoord.server.storage.postgres import PostgresStateStore
from groupcoord.server.storage.sqlite import SqliteStateStore

__all__ = [
    "MemoryStateStore",
    "PostgresStateStore",
    "SqliteStateStore",
    "StateStore",
    "StorageError",
    "SynchronousStateStore",
]
