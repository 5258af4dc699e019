"""Share sessions (server/share/sessions.py): epochs, replacement, the session limit, connections."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.share.sessions import INT32_MAX, ShareSessions, next_epoch


def test_epochs_and_close() -> None:
    s = ShareSessions()
    sess, replaced = s.open("g", "u1", "conn1", [("aa", 0)])
    assert sess is not None and replaced is None and sess.epoch == 1
    assert s.get("g", "u1", 2)[0] == E.INVALID_SHARE_SESSION_EPOCH
    err, got = s.get("g", "u1", 1)
    assert err == 0 and got is sess
    s.advance(sess, [("aa", 1)], [("aa", 0)])
    assert sess.epoch == 2 and list(sess.partitions) == [("aa", 1)]
    assert s.get("g", "u1", 1)[0] == E.INVALID_SHARE_SESSION_EPOCH  # a repeated epoch
    assert s.get("g", "u1", -1)[1] is sess  # close does not check the epoch
    s.close(sess)
    assert s.get("g", "u1", 2)[0] == E.SHARE_SESSION_NOT_FOUND
    assert next_epoch(INT32_MAX) == 1


def test_reopen_replaces_and_limit() -> None:
    s = ShareSessions(max_sessions=1)
    first, _ = s.open("g", "u1", "c1", [])
    again, replaced = s.open("g", "u1", "c2", [])
    assert replaced is first and again is not None and again.connection == "c2"
    assert s.open("g", "u2", "c3", []) == (None, None)  # SHARE_SESSION_LIMIT_REACHED
    assert s.of_connection("c2") == [again] and s.of_connection("c1") == []


def test_listed_and_forgotten_leaves_the_session() -> None:
    """Kafka's ShareSession.update adds the request's partitions first and removes the forgotten ones after:
    a partition in both (acknowledgements sent while it is forgotten) ends out of the session."""
    s = ShareSessions()
    sess, _ = s.open("g", "u1", "c1", [("aa", 0), ("aa", 1)])
    assert sess is not None
    s.advance(sess, [("aa", 0), ("bb", 0)], [("aa", 0), ("bb", 0)])
    assert list(sess.partitions) == [("aa", 1)]
