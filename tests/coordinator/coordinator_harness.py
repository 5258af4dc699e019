"""Fake clock and timer wheel driving `GroupStateMachine` the way the actor does, for deterministic tests.

`Harness.apply(effects)` mirrors the actor contract: timers and events first, then the (fake) durable write
of `records`, then `after_persist(ok, now)`, then replies. Replies are collected per token, and a token
answered twice fails the test. Persist outcomes are scripted with `fail_next_persists`, and writes can be
held (`hold_persists = True`) to interleave other requests before `flush_persists()`.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.machine import GroupStateMachine
from groupcoord.server.coordinator.types import (
    CancelTimer,
    CommitPartition,
    CoordinatorConfig,
    Effects,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveGroupRequest,
    LeaveMember,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ScheduleTimer,
    SyncGroupRequest,
    SyncGroupResult,
)

E = ErrorCode
START_MS = 1_700_000_000_000
#: GMMT defaults: min session 10 ms, session/rebalance 500 ms, initial delay 3000 ms.
TEST_CONFIG = CoordinatorConfig(min_session_timeout_ms=10)


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        b = t.encode()
        out += struct.pack(">h", len(b)) + b
    return out + struct.pack(">i", -1)


def assignment(parts: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(parts))
    for t, ps in parts.items():
        b = t.encode()
        out += struct.pack(">h", len(b)) + b + struct.pack(">i", len(ps))
        out += b"".join(struct.pack(">i", p) for p in ps)
    return out + struct.pack(">i", -1)


DEFAULT_PROTOCOLS = (("range", subscription("foo")),)


class Harness:
    def __init__(self, config: CoordinatorConfig = TEST_CONFIG) -> None:
        seq = itertools.count(1)
        self.m = GroupStateMachine(config, id_factory=lambda prefix: f"{prefix}-{next(seq)}")
        self.config = config
        self.now = START_MS
        self.timers: dict[tuple, int] = {}
        self.replies: dict[Any, Any] = {}
        self.records: list = []
        self.events: list[dict] = []
        self.fail_next_persists = 0
        self.hold_persists = False
        self.held: list[Effects] = []
        self.persist_count = 0
        self._tokens = itertools.count(1)

    # ------------------------------------------------------------------------------------ actor model

    def apply(self, fx: Effects | None) -> None:
        if fx is None:
            return
        for op in fx.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op.deadline_ms
            else:
                assert isinstance(op, CancelTimer)
                self.timers.pop(op.key, None)
        for ev in fx.events:
            assert ev["ts"] == self.now
            self.events.append(ev)
        if fx.records and self.hold_persists:
            self.held.append(fx)
            return
        self._finish(fx)

    def _finish(self, fx: Effects) -> None:
        ok = True
        if fx.records:
            self.persist_count += 1
            if self.fail_next_persists:
                self.fail_next_persists -= 1
                ok = False
            else:
                self.records.extend(fx.records)
        if fx.after_persist is not None:
            self.apply(fx.after_persist(ok, self.now))
        for token, result in fx.replies:
            assert token not in self.replies, f"token {token} answered twice"
            self.replies[token] = result

    def flush_persists(self, ok: bool = True) -> None:
        held, self.held = self.held, []
        for fx in held:
            if not ok:
                self.fail_next_persists += 1
            self._finish(fx)

    def advance(self, ms: int) -> None:
        """Move the clock, firing due timers in deadline order (each at its own deadline)."""
        target = self.now + ms
        while True:
            due = [(d, k) for k, d in self.timers.items() if d <= target]
            if not due:
                break
            deadline, key = min(due, key=lambda x: x[0])
            del self.timers[key]
            self.now = max(self.now, deadline)
            self.apply(self.m.on_timer(key, self.now))
        self.now = target

    def token(self) -> int:
        return next(self._tokens)

    def reply(self, token: int) -> Any:
        return self.replies.get(token)

    def group(self, gid: str = "group"):
        return self.m.group(gid)

    def events_of(self, event: str, **match: Any) -> list[dict]:
        return [e for e in self.events if e["event"] == event and all(e[k] == v for k, v in match.items())]

    # ------------------------------------------------------------------------------------- requests

    def join(
        self,
        gid: str = "group",
        member_id: str = "",
        instance: str | None = None,
        version: int = 5,
        protocols: tuple = DEFAULT_PROTOCOLS,
        session: int = 500,
        rebalance: int = 500,
        ptype: str = "consumer",
        client_id: str = "client",
    ) -> int:
        tok = self.token()
        req = JoinGroupRequest(
            version,
            gid,
            session,
            rebalance,
            member_id,
            instance,
            ptype,
            protocols,
            None,
            client_id,
            "/127.0.0.1",
        )
        self.apply(self.m.join_group(req, tok, self.now))
        return tok

    def join_result(self, tok: int) -> JoinGroupResult:
        r = self.reply(tok)
        assert isinstance(r, JoinGroupResult), f"join {tok} not answered"
        return r

    def new_pending_member(self, gid: str = "group", **kw: Any) -> str:
        """First v4+ JoinGroup of a dynamic member: returns the id handed out with MEMBER_ID_REQUIRED."""
        r = self.join_result(self.join(gid, version=kw.pop("version", 5), **kw))
        assert r.error == E.MEMBER_ID_REQUIRED
        return r.member_id

    def sync(
        self,
        gid: str,
        member_id: str,
        generation: int,
        assignments: tuple = (),
        instance: str | None = None,
        version: int = 3,
        ptype: str | None = None,
        pname: str | None = None,
    ) -> int:
        tok = self.token()
        req = SyncGroupRequest(version, gid, generation, member_id, instance, ptype, pname, assignments)
        self.apply(self.m.sync_group(req, tok, self.now))
        return tok

    def heartbeat(self, gid: str, member_id: str, generation: int, instance: str | None = None) -> int:
        err, fx = self.m.heartbeat(HeartbeatRequest(3, gid, generation, member_id, instance), self.now)
        self.apply(fx)
        return err

    def leave(self, gid: str, *members: tuple[str, str | None], version: int = 3):
        req = LeaveGroupRequest(version, gid, tuple(LeaveMember(mid, iid) for mid, iid in members))
        result, fx = self.m.leave_group(req, self.now)
        self.apply(fx)
        return result

    def commit(
        self,
        gid: str,
        offsets: dict[tuple[str, int], int],
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
        version: int = 8,
        retention: int = -1,
        metadata: str | None = None,
    ) -> int:
        topics: dict[str, list[CommitPartition]] = {}
        for (t, p), off in offsets.items():
            topics.setdefault(t, []).append(CommitPartition(p, off, -1, -1, metadata))
        req = OffsetCommitRequest(
            version,
            gid,
            generation,
            member_id,
            instance,
            retention,
            tuple((t, tuple(ps)) for t, ps in topics.items()),
        )
        tok = self.token()
        self.apply(self.m.commit_offsets(req, tok, self.now))
        return tok

    def fetch(self, gid: str, topics: dict[str, list[int]] | None, require_stable: bool = False):
        t = None if topics is None else tuple((k, tuple(v)) for k, v in topics.items())
        return self.m.fetch_offsets(OffsetFetchRequest(8, gid, t, require_stable), self.now)

    # ---------------------------------------------------------------------------- composite flows

    def stable_group(
        self, gid: str = "group", n: int = 2, instances: list[str | None] | None = None, **kw: Any
    ) -> list[JoinGroupResult]:
        """Build a Stable group of n members (joined together, leader assigns foo partitions round robin)."""
        instances = instances or [None] * n
        toks = [
            self.join(gid, instance=instances[i], version=kw.get("version", 3), **_strip(kw))
            for i in range(n)
        ]
        self.advance(self.config.initial_rebalance_delay_ms)
        for _ in range(1000):  # the initial delay may have been extended: stop right at completion
            if self.reply(toks[0]) is not None:
                break
            self.advance(10)
        results = [self.join_result(t) for t in toks]
        assert all(r.error == 0 for r in results), results
        leader = next(r for r in results if r.leader == r.member_id)
        assigns = tuple((r.member_id, assignment({"foo": [i]})) for i, r in enumerate(results))
        s = self.sync(gid, leader.member_id, leader.generation_id, assigns)
        assert self.reply(s).error == 0
        for r in results:
            if r is not leader:
                assert self.reply(self.sync(gid, r.member_id, r.generation_id)).error == 0
        assert self.group(gid).state == "Stable"
        return results


def _strip(kw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if k != "version"}


def sync_ok(r: Any) -> SyncGroupResult:
    assert isinstance(r, SyncGroupResult) and r.error == 0, r
    return r
