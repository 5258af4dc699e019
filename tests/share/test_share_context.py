"""The share session's context of a ShareFetch / ShareAcknowledge (server/share/context.py, Kafka's
ShareFetchContext): the epoch rules, applied before anything is acknowledged or fetched."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.share.context import (
    SessionRefused,
    ShareFetchContext,
    acknowledge_context,
    fetch_context,
)
from groupcoord.server.share.sessions import ShareSessions

A, B = ("aa", 0), ("aa", 1)


def test_epoch_zero_opens_a_full_session_and_refuses_acknowledgements() -> None:
    sessions = ShareSessions()
    refused = fetch_context(sessions, "g", "m", "c", 0, [A], [], has_acks=True)
    assert refused == SessionRefused(
        E.INVALID_REQUEST, "Acknowledgements are not allowed at share session epoch 0"
    )
    assert sessions.sessions == {}
    opened = fetch_context(sessions, "g", "m", "c", 0, [A], [], has_acks=False)
    assert isinstance(opened, ShareFetchContext) and opened.full and not opened.final
    assert opened.session.epoch == 1 and list(opened.session.partitions) == [A]


def test_a_later_epoch_moves_the_session_along() -> None:
    sessions = ShareSessions()
    fetch_context(sessions, "g", "m", "c", 0, [A], [], has_acks=False)
    later = fetch_context(sessions, "g", "m", "c", 1, [B], [A], has_acks=True)
    assert isinstance(later, ShareFetchContext) and not later.full and not later.final
    assert later.session.epoch == 2 and list(later.session.partitions) == [B]
    stale = fetch_context(sessions, "g", "m", "c", 1, [], [], has_acks=False)
    assert stale == SessionRefused(E.INVALID_SHARE_SESSION_EPOCH, "Share session error")
    unknown = fetch_context(sessions, "g", "other", "c", 1, [], [], has_acks=False)
    assert unknown == SessionRefused(E.SHARE_SESSION_NOT_FOUND, "Share session error")


def test_the_session_limit_is_refused() -> None:
    sessions = ShareSessions(max_sessions=1)
    fetch_context(sessions, "g", "m1", "c", 0, [], [], has_acks=False)
    full = fetch_context(sessions, "g", "m2", "c", 0, [], [], has_acks=False)
    assert full == SessionRefused(E.SHARE_SESSION_LIMIT_REACHED, "Too many share sessions")


def test_the_final_epoch_ends_the_session_once_closed() -> None:
    sessions = ShareSessions()
    fetch_context(sessions, "g", "m", "c", 0, [A, B], [], has_acks=False)
    final = fetch_context(sessions, "g", "m", "c", -1, [], [], has_acks=True)
    assert isinstance(final, ShareFetchContext) and final.final and final.session.epoch == 1  # not moved on
    assert final.close() == [A, B]
    assert sessions.sessions == {}


def test_share_acknowledge_cannot_open_a_session() -> None:
    sessions = ShareSessions()
    refused = acknowledge_context(sessions, "g", "m", 0)
    assert refused == SessionRefused(
        E.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session"
    )
    fetch_context(sessions, "g", "m", "c", 0, [A], [], has_acks=False)
    acked = acknowledge_context(sessions, "g", "m", 1)
    assert (
        isinstance(acked, ShareFetchContext)
        and acked.session.epoch == 2
        and list(acked.session.partitions) == [A]
    )
    assert acknowledge_context(sessions, "g", "m", 1) == SessionRefused(
        E.INVALID_SHARE_SESSION_EPOCH, "Share session error"
    )
    final = acknowledge_context(sessions, "g", "m", -1)
    assert isinstance(final, ShareFetchContext) and final.final
