"""Periodic `lag_snapshot` journal events: each group's committed offsets next to the partitions' log ends.

The report (pipeline/) reads files only, so lag over time can only come from the journal: every
`--journal-lag-snapshot-interval-ms` one line per group with committed offsets records, per partition, the
committed offset and the log end offset (high watermark) at that moment (docs/journal.md). Reading both
happens on the event loop in one pass, so a snapshot is consistent with itself; it costs one dict per group,
and groups without committed offsets write nothing.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from groupcoord.server.coordinator.context import EVENT_KEYS
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.journal.writer import Journal
from groupcoord.server.log.manager import LogManager
from groupcoord.server.timers import Clock, TimerService

KEY = "lag_snapshot"


class SnapshotSource(Protocol):
    """What a snapshot reads: the group state machine and the topic logs (the broker has both)."""

    machine: GroupCoordinatorShard | None
    logs: LogManager | None


def snapshot_events(source: SnapshotSource, now_ms: int) -> list[dict[str, object]]:
    """One `lag_snapshot` event per group with committed offsets, in group id order.

    `offsets` maps `topic-partition` to `{"committed": c, "log_end": e}`; `log_end` is null for a partition
    this server has no log for (a commit to an unknown topic), so the report leaves it out of the lag.
    """
    machine, logs = source.machine, source.logs
    if machine is None:
        return []
    events: list[dict[str, object]] = []
    for gid in sorted(machine.group_ids()):
        committed = machine.committed_offsets(gid)
        if not committed:
            continue
        offsets: dict[str, dict[str, int | None]] = {}
        for (topic, p), value in sorted(committed.items()):
            marks = logs.watermarks(topic, p) if logs is not None else None
            offsets[f"{topic}-{p}"] = {
                "committed": value.offset,
                "log_end": marks[1] if marks is not None else None,
            }
        g = machine.group(gid)
        ev: dict[str, object] = dict.fromkeys(EVENT_KEYS)
        ev.update(ts=now_ms, group=gid, event=KEY, offsets=offsets)
        if g is not None:
            ev.update(
                generation=g.generation_id,
                members=len(g.members),
                leader=g.leader_id,
                protocol_type=g.protocol_type,
                protocol=g.protocol_name,
            )
        else:  # offsets without a live group (a simple group whose metadata is gone)
            ev.update(generation=0, members=0)
        events.append(ev)
    return events


class LagSnapshots:
    """Writes `snapshot_events` to the journal every `interval_ms` (on the broker's clock) until `close()`."""

    def __init__(
        self,
        source: SnapshotSource,
        journal: Journal,
        loop: asyncio.AbstractEventLoop,
        clock: Clock,
        interval_ms: int,
    ) -> None:
        self.source = source
        self.journal = journal
        self.clock = clock
        self.timers = TimerService(loop, self.run, clock)
        self.interval_ms = interval_ms
        self.written = 0

    def start(self) -> None:
        if self.interval_ms > 0:
            self.timers.schedule(KEY, self.clock.now_ms() + self.interval_ms)

    def run(self, _key: object = None) -> None:
        """The timer's callback: journal one snapshot, then arm the next."""
        for ev in snapshot_events(self.source, self.clock.now_ms()):
            self.journal.append(ev)
            self.written += 1
        self.start()

    def close(self) -> None:
        self.timers.close()
