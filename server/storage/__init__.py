"""Durable coordinator state (committed offsets, group metadata): the StateStore interface and stores."""

from server.storage.base import StateStore, StorageError
from server.storage.memory import MemoryStateStore
from server.storage.sqlite import SqliteStateStore

__all__ = ["MemoryStateStore", "SqliteStateStore", "StateStore", "StorageError"]
