"""Share sessions (Kafka's `ShareSessionCache` and the epoch rules of `SharePartitionManager.newContext`).

A session is keyed by (group id, member id) and bound to the connection that opened it. ShareFetch epoch 0
opens (or replaces) it with epoch 1 next; a later request must carry exactly the stored epoch, which then
moves on (wrapping from INT32_MAX to 1); -1 closes it. Pure: no I/O, the connection is an opaque key.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from groupcoord.protocol.errors import ErrorCode

#: (topic id hex, partition)
Key = tuple[str, int]
INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection: Hashable
    epoch: int = 1
    partitions: dict[Key, None] = field(default_factory=dict)  # ordered set


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= INT32_MAX else epoch + 1


class ShareSessions:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def open(
        self, group_id: str, member_id: str, connection: Hashable, partitions: Iterable[Key]
    ) -> tuple[ShareSession | None, ShareSession | None]:
        """Epoch 0: (the new session or None at the session limit, the one it replaced)."""
        key = (group_id, member_id)
        old = self.sessions.pop(key, None)
        if len(self.sessions) >= self.max_sessions:
            if old is not None:
                self.sessions[key] = old
            return None, None
        s = ShareSession(group_id, member_id, connection, 1, dict.fromkeys(partitions))
        self.sessions[key] = s
        return s, old

    def get(self, group_id: str, member_id: str, epoch: int) -> tuple[int, ShareSession | None]:
        """A request at epoch n > 0 (or -1): SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH, else
        the session (its epoch is checked only for n > 0)."""
        s = self.sessions.get((group_id, member_id))
        if s is None:
            return int(ErrorCode.SHARE_SESSION_NOT_FOUND), None
        if epoch != -1 and epoch != s.epoch:
            return int(ErrorCode.INVALID_SHARE_SESSION_EPOCH), None
        return 0, s

    def advance(self, s: ShareSession, add: Iterable[Key] = (), forget: Iterable[Key] = ()) -> None:
        """Kafka's ShareSession.update: the request's partitions are added first and the forgotten ones
        removed after, so a partition both listed (say, to carry its last acknowledgements) and forgotten in
        one request leaves the session; its acknowledgements are still applied."""
        for k in add:
            s.partitions[k] = None
        for k in forget:
            s.partitions.pop(k, None)
        s.epoch = next_epoch(s.epoch)

    def close(self, s: ShareSession) -> None:
        if self.sessions.get((s.group_id, s.member_id)) is s:
            del self.sessions[(s.group_id, s.member_id)]

    def of_connection(self, connection: Hashable) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.connection == connection]
