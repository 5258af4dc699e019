"""Fixtures for the pipeline tests: one shared local Spark session and a hand-built journal writer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.server.journal.writer import FIELDS as JOURNAL_FIELDS

FIELDS = JOURNAL_FIELDS  # the journal writer's own field list, not a copy


class Journal:
    """Writes journal lines the way docs/journal.md specifies (every field present, null when absent).

    Keeps per-group state (state, generation, members) so a test states only what it is about:
    `j.transition("g", "PreparingRebalance", "new_member", ts=...)`.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.lines: list[dict[str, Any]] = []
        self.seq = 0
        self.state: dict[str, str] = {}
        self.generation: dict[str, int] = {}
        self.members: dict[str, set[str]] = {}

    def event(self, group: str, event: str, ts: int, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        line = dict.fromkeys(FIELDS)
        line.update(
            ts=ts,
            seq=self.seq,
            group=group,
            event=event,
            generation=self.generation.get(group, 0),
            members=len(self.members.get(group, ())),
            protocol_type="consumer",
            protocol="range",
        )
        line.update(fields)
        self.lines.append(line)
        return line

    def create(self, group: str, ts: int) -> None:
        self.state[group] = "Empty"
        self.generation[group] = 0
        self.members[group] = set()
        self.event(group, "group_created", ts)

    def join(self, group: str, member: str, ts: int, instance: str | None = None, client: str = "c") -> None:
        self.members[group].add(member)
        self.event(group, "member_joined", ts, member_id=member, group_instance_id=instance, client_id=client)

    def remove(self, group: str, member: str, ts: int, reason: str, **fields: Any) -> None:
        self.members[group].discard(member)
        self.event(group, "member_removed", ts, member_id=member, reason=reason, **fields)

    def static_rejoin(self, group: str, old: str, new: str, instance: str, ts: int, skip: bool) -> None:
        self.members[group].discard(old)
        self.members[group].add(new)
        self.event(
            group,
            "static_rejoin",
            ts,
            member_id=new,
            previous_member_id=old,
            group_instance_id=instance,
            skip_assignment=skip,
        )

    def transition(
        self, group: str, to: str, reason: str, ts: int, assignment: dict[str, list[str]] | None = None
    ) -> None:
        if to in ("CompletingRebalance",) or (to == "Empty" and reason == "join_complete"):
            self.generation[group] += 1
        frm = self.state.get(group)
        self.state[group] = to
        self.event(
            group, "state_change", ts, state_from=frm, state_to=to, reason=reason, assignment=assignment
        )

    def rebalance(
        self,
        group: str,
        reason: str,
        ts: int,
        join_ms: int,
        sync_ms: int,
        assignment: dict[str, list[str]] | None,
    ) -> None:
        """PreparingRebalance at ts, CompletingRebalance after join_ms, Stable sync_ms later."""
        self.transition(group, "PreparingRebalance", reason, ts)
        self.transition(group, "CompletingRebalance", "join_complete", ts + join_ms)
        self.transition(group, "Stable", "sync_complete", ts + join_ms + sync_ms, assignment=assignment)

    def write(self, name: str = "journal-1000-000000.jsonl", extra: str = "") -> Path:
        d = self.data_dir / "journal"
        d.mkdir(parents=True, exist_ok=True)
        path = d / name
        path.write_text("".join(json.dumps(x) + "\n" for x in self.lines) + extra)
        return self.data_dir


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "data")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] session for every Spark test (starting a JVM costs seconds; the suite shares it)."""
    from groupcoord.pipeline.spark import build_session, java_problem

    problem = java_problem()
    if problem:
        pytest.skip(problem)
    session = build_session(
        "local[2]",
        app_name="groupcoord-tests",
        shuffle_partitions=2,
        driver_memory="1g",
        # tiny inputs: adaptive re-planning costs more than it saves
        extra_conf={"spark.sql.adaptive.enabled": "false", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()
    _stop_jvm()


def _stop_jvm() -> None:
    """`SparkSession.stop()` leaves the gateway JVM running until Python exits; end it now."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None
