"""What a ShareFetch or ShareAcknowledge does to its member's share session, before anything is acknowledged
or fetched (Kafka's `SharePartitionManager.newContext` and its `ShareFetchContext`s): the rules of the session
epochs beside the sessions (sessions.py) and the share partitions, so the handlers only translate.

- ShareFetch at epoch 0 opens (or replaces) the session with the partitions asked for; acknowledgements are
  refused there (INVALID_REQUEST), and so is a session past the limit (SHARE_SESSION_LIMIT_REACHED). The
  answer lists every partition of the new session (a full context).
- At epoch n > 0 the session must exist (SHARE_SESSION_NOT_FOUND) at exactly that epoch
  (INVALID_SHARE_SESSION_EPOCH); ShareFetch adds the partitions asked for and drops the forgotten ones, and
  the epoch moves on. ShareAcknowledge cannot open a session (INVALID_SHARE_SESSION_EPOCH at epoch 0).
- At epoch -1 the session must exist; it ends once the request's acknowledgements are applied, and its
  members' records are released (`final`; the caller ends it with `close()`).

Pure: no I/O; a refusal is a `SessionRefused` the handler answers top-level, and then nothing is applied.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.share.sessions import Key, ShareSession, ShareSessions

E = ErrorCode
FINAL_EPOCH = -1


@dataclass(frozen=True, slots=True)
class SessionRefused:
    """The request's top-level error: no acknowledgement is applied, nothing fetched."""

    error: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class ShareFetchContext:
    """The member's session for this request."""

    sessions: ShareSessions
    session: ShareSession
    #: a new session (epoch 0): the answer lists every partition of it
    full: bool
    #: epoch -1: the session ends once the acknowledgements are applied
    final: bool

    def close(self) -> list[Key]:
        """End the session; the partitions whose records the member held (to be released)."""
        self.sessions.close(self.session)
        return list(self.session.partitions)


def fetch_context(
    sessions: ShareSessions,
    group_id: str,
    member_id: str,
    connection: Hashable,
    epoch: int,
    wanted: Sequence[Key],
    forgotten: Sequence[Key],
    has_acks: bool,
) -> ShareFetchContext | SessionRefused:
    """ShareFetch's session at `epoch`, moved along (or the refusal)."""
    if epoch == 0:
        if has_acks:
            return SessionRefused(
                E.INVALID_REQUEST, "Acknowledgements are not allowed at share session epoch 0"
            )
        # a replaced session's records are not released (Kafka): the member still owns them
        session, _ = sessions.open(group_id, member_id, connection, wanted)
        if session is None:
            return SessionRefused(E.SHARE_SESSION_LIMIT_REACHED, "Too many share sessions")
        return ShareFetchContext(sessions, session, full=True, final=False)
    err, found = sessions.get(group_id, member_id, epoch)
    if found is None:
        return SessionRefused(ErrorCode(err), "Share session error")
    if epoch != FINAL_EPOCH:
        sessions.advance(found, wanted, forgotten)
    return ShareFetchContext(sessions, found, full=False, final=epoch == FINAL_EPOCH)


def acknowledge_context(
    sessions: ShareSessions, group_id: str, member_id: str, epoch: int
) -> ShareFetchContext | SessionRefused:
    """ShareAcknowledge's session at `epoch`, moved along (or the refusal)."""
    if epoch == 0:
        return SessionRefused(E.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
    err, found = sessions.get(group_id, member_id, epoch)
    if found is None:
        return SessionRefused(ErrorCode(err), "Share session error")
    if epoch != FINAL_EPOCH:
        sessions.advance(found)
    return ShareFetchContext(sessions, found, full=False, final=epoch == FINAL_EPOCH)
