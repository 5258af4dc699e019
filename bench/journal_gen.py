"""Write a synthetic coordinator journal for benchmarking `groupcoord report`.

The output follows `docs/journal.md` (`<out>/journal/journal-<start-ms>-<seq>.jsonl`, one JSON object per
line, every field present) so the pipeline cannot tell it from a real one. Each group is a small state
machine that lives through "storms" seen in production: rolling restarts of dynamic members (a leave and a
join rebalance per consumer), rolling restarts of static members (static rejoins without a rebalance, the
leader told to skip assignment, the odd one that overruns its session timeout), session expiries, scale-outs,
leader rejoins, metadata changes, sync timeouts, static replacements during a rebalance, max-size fencing and
group deletion.

Speed matters more than elegance here (10M events is the benchmark size): lines are built with f-strings
rather than `json.dumps`, ids are generated from `random.getrandbits`, and the groups are split across
worker processes, each writing its own files as if it were a separate coordinator process. Within a group,
events are in time order and `seq` increases; across groups a file is only roughly time ordered (a group's
whole storm is emitted at once), which the pipeline does not depend on.

Usage: python bench/journal_gen.py --out /tmp/groupcoord-bench-journal --events 10000000 --groups 10000 [--format parquet]

With `--format parquet` each worker rolls every file it closes into `journal-<start-ms>-<seq>.parquet` with the
coordinator's own roll function (server/journal_roll.py) and the roll time is printed apart.
"""

from __future__ import annotations

import argparse
import heapq
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

from groupcoord.server.journal.writer import JOURNAL_VERSION

NULL = "null"


def _q(s: str | None) -> str:
    """JSON-quote an id; ids are generated ASCII without quotes or backslashes, so no escaping is needed."""
    return NULL if s is None else f'"{s}"'


class _Writer:
    """Buffers lines and rotates files by size, like the coordinator's journal writer."""

    def __init__(self, directory: Path, start_ms: int, max_bytes: int, parquet: bool = False) -> None:
        self.directory = directory
        self.parquet = parquet
        self.roll_seconds = 0.0
        self.start_ms = start_ms
        self.max_bytes = max_bytes
        self.file_seq = 0
        self.buf: list[str] = []
        self.buf_bytes = 0
        self.file_bytes = 0
        self.fh = None
        self.events = 0
        self._open()

    def _open(self) -> None:
        if self.fh is not None:
            self._close_file()
        path = self.directory / f"journal-{self.start_ms}-{self.file_seq:06d}.jsonl"
        self.file_seq += 1
        self.fh = open(path, "w", encoding="ascii")  # noqa: SIM115 - rotated by hand
        self.file_bytes = 0

    def add(self, lines: list[str]) -> None:
        self.buf.extend(lines)
        self.events += len(lines)
        self.buf_bytes += sum(map(len, lines)) + len(lines)
        if self.buf_bytes >= 4 << 20:
            self.flush()

    def flush(self) -> None:
        if not self.buf:
            return
        self.fh.write("\n".join(self.buf))
        self.fh.write("\n")
        self.file_bytes += self.buf_bytes
        self.buf.clear()
        self.buf_bytes = 0
        if self.file_bytes >= self.max_bytes:
            self._open()

    def _close_file(self) -> None:
        """Close the current file; with --format parquet roll it as the coordinator does (and time that)."""
        self.fh.close()
        if self.parquet:
            from groupcoord.server.journal.roll import roll_file

            t0 = time.perf_counter()
            roll_file(self.fh.name)
            self.roll_seconds += time.perf_counter() - t0

    def close(self) -> None:
        self.flush()
        self._close_file()


class _Group:
    """One simulated consumer group; `episode()` returns the journal lines of its next storm."""

    def __init__(self, name: str, rng: random.Random, worker: _Emitter) -> None:
        self.name = name
        self.rng = rng
        self.w = worker
        self.static = rng.random() < 0.3
        self.topic = f"{name}-events"
        self.partitions = rng.choice((3, 6, 6, 8, 12, 12, 16, 24))
        self.target_members = rng.randint(2, min(12, self.partitions))
        self.protocol = rng.choice(("range", "roundrobin", "cooperative-sticky"))
        self.generation = 0
        self.state = "Dead"
        self.members: list[str] = []  # member ids in join order
        self.instance: dict[str, str | None] = {}
        self.client: dict[str, str] = {}
        self.leader: str | None = None
        self.next_instance = 0
        self.exists = False

    # -- line builders -------------------------------------------------------------------------------
    def _line(
        self,
        ts: int,
        event: str,
        *,
        state_from: str | None = None,
        state_to: str | None = None,
        reason: str | None = None,
        member: str | None = None,
        previous: str | None = None,
        skip: str = NULL,
        assignment: str = NULL,
    ) -> str:
        iid = self.instance.get(member) if member else None
        cid = self.client.get(member) if member else None
        return (
            f'{{"v":{JOURNAL_VERSION},"ts":{ts},"seq":{self.w.next_seq()},"group":"{self.name}","event":"{event}",'
            f'"generation":{self.generation},"state_from":{_q(state_from)},"state_to":{_q(state_to)},'
            f'"reason":{_q(reason)},"member_id":{_q(member)},"previous_member_id":{_q(previous)},'
            f'"group_instance_id":{_q(iid)},"client_id":{_q(cid)},"members":{len(self.members)},'
            f'"leader":{_q(self.leader)},"protocol_type":"consumer","protocol":"{self.protocol}",'
            f'"skip_assignment":{skip},"assignment":{assignment}}}'
        )

    def _transition(self, out: list[str], ts: int, to: str, reason: str, assignment: str = NULL) -> None:
        frm = self.state
        self.state = to
        out.append(
            self._line(ts, "state_change", state_from=frm, state_to=to, reason=reason, assignment=assignment)
        )

    def _assignment(self) -> str:
        """Range-style: contiguous partition ranges in member order, so a leave shifts later ranges."""
        n = len(self.members)
        if n == 0:
            return "{}"
        per, extra = divmod(self.partitions, n)
        parts = []
        p = 0
        for i, m in enumerate(self.members):
            k = per + (1 if i < extra else 0)
            tps = ",".join(f'"{self.topic}-{j}"' for j in range(p, p + k))
            p += k
            parts.append(f'"{m}":[{tps}]')
        return "{" + ",".join(parts) + "}"

    def _new_member(self) -> str:
        rng = self.rng
        n = self.next_instance
        self.next_instance += 1
        client = f"consumer-{self.name}-{n % 16}"
        h = f"{rng.getrandbits(128):032x}"
        mid = f"{client}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        self.client[mid] = client
        if self.static:  # the lowest instance id no live member holds (instance ids are unique in a group)
            used = {self.instance.get(m) for m in self.members}
            k = 0
            while f"{self.name}-i{k}" in used:
                k += 1
            self.instance[mid] = f"{self.name}-i{k}"
        else:
            self.instance[mid] = None
        return mid

    def _replace_id(self, old: str) -> str:
        """A static member restarting: same instance id, new member id."""
        rng = self.rng
        client = self.client[old]
        h = f"{rng.getrandbits(128):032x}"
        mid = f"{client}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        self.client[mid] = client
        self.instance[mid] = self.instance[old]
        return mid

    def _forget(self, mid: str) -> None:
        self.client.pop(mid, None)
        self.instance.pop(mid, None)

    # -- rebalance building blocks -------------------------------------------------------------------
    def _complete(self, out: list[str], ts: int, slow: bool = False) -> int:
        """Join phase then sync phase; returns the time the group is Stable (or Empty)."""
        rng = self.rng
        ts += int(rng.lognormvariate(6.5 if slow else 5.0, 0.8))  # waits for members to rejoin
        self.generation += 1
        if not self.members:
            self.leader = None
            self._transition(out, ts, "Empty", "join_complete")
            return ts
        if self.leader not in self.members:
            self.leader = self.members[0]
        self._transition(out, ts, "CompletingRebalance", "join_complete")
        ts += int(rng.lognormvariate(3.0, 0.7))
        self._transition(out, ts, "Stable", "sync_complete", self._assignment())
        return ts

    def _join(self, out: list[str], ts: int, n: int = 1) -> int:
        for i in range(n):
            mid = self._new_member()
            self.members.append(mid)
            out.append(self._line(ts + i, "member_joined", member=mid))
            if i == 0 and self.state in ("Stable", "Empty", "CompletingRebalance"):
                self._transition(out, ts + i, "PreparingRebalance", "new_member")
        return self._complete(out, ts + n)

    def _remove(self, out: list[str], ts: int, mid: str, reason: str, prb_reason: str) -> int:
        self.members.remove(mid)
        out.append(self._line(ts, "member_removed", reason=reason, member=mid))
        self._forget(mid)
        if self.state != "PreparingRebalance":
            self._transition(out, ts, "PreparingRebalance", prb_reason)
        return self._complete(out, ts + 1, slow=reason != "left")

    # -- episodes ------------------------------------------------------------------------------------
    def create(self, ts: int) -> tuple[list[str], int]:
        out: list[str] = []
        self.generation = 0
        self.state = "Empty"
        self.exists = True
        self.members = []
        out.append(self._line(ts, "group_created"))
        ts = self._join(out, ts + 1, self.target_members)
        return out, ts

    def episode(self, ts: int) -> tuple[list[str], int]:
        if not self.exists:
            return self.create(ts)
        rng = self.rng
        out: list[str] = []
        r = rng.random()
        if not self.members:
            ts = self._join(out, ts, self.target_members)
        elif r < 0.30:  # rolling restart
            for mid in list(self.members):
                ts += rng.randint(2000, 15000)
                if self.static and rng.random() < 0.9:
                    new = self._replace_id(mid)
                    i = self.members.index(mid)
                    self.members[i] = new
                    was_leader = self.leader == mid
                    if was_leader:
                        self.leader = new
                    out.append(
                        self._line(
                            ts,
                            "static_rejoin",
                            member=new,
                            previous=mid,
                            skip="true" if was_leader else "false",
                        )
                    )
                    self._forget(mid)
                elif self.static:  # restart slower than the session timeout
                    ts = self._remove(out, ts, mid, "session_timeout", "session_timeout")
                    ts = self._join(out, ts + rng.randint(1000, 5000))
                else:
                    ts = self._remove(out, ts, mid, "left", "leave")
                    ts = self._join(out, ts + rng.randint(3000, 20000))
        elif r < 0.50:  # expiry of one member, replacement joins later
            ts = self._remove(out, ts, rng.choice(self.members), "session_timeout", "session_timeout")
            ts = self._join(out, ts + rng.randint(5000, 60000))
        elif r < 0.62:  # scale out then back in
            ts = self._join(out, ts, rng.randint(1, 3))
            while len(self.members) > self.target_members:
                ts = self._remove(out, ts + rng.randint(60000, 600000), self.members[-1], "left", "leave")
        elif r < 0.72:
            self._transition(out, ts, "PreparingRebalance", "leader_rejoin")
            ts = self._complete(out, ts)
        elif r < 0.80:
            self._transition(out, ts, "PreparingRebalance", "metadata_change")
            ts = self._complete(out, ts)
        elif r < 0.86:  # a new member does not send SyncGroup in time
            mid = self._new_member()
            self.members.append(mid)
            out.append(self._line(ts, "member_joined", member=mid))
            self._transition(out, ts, "PreparingRebalance", "new_member")
            ts += int(rng.lognormvariate(5.0, 0.5))
            self.generation += 1
            self._transition(out, ts, "CompletingRebalance", "join_complete")
            ts += rng.randint(5000, 30000)
            self.members.remove(mid)
            out.append(self._line(ts, "member_removed", reason="sync_timeout", member=mid))
            self._forget(mid)
            self._transition(out, ts, "PreparingRebalance", "sync_timeout")
            ts = self._complete(out, ts + 1, slow=True)
        elif r < 0.92 and self.static:  # static member rejoins with an unknown id mid-rebalance
            self._transition(out, ts, "PreparingRebalance", "metadata_change")
            self.generation += 1
            ts += int(rng.lognormvariate(5.0, 0.5))
            self._transition(out, ts, "CompletingRebalance", "join_complete")
            old = rng.choice(self.members)
            new = self._replace_id(old)
            ts += rng.randint(5, 50)
            out.append(self._line(ts, "member_removed", reason="static_replaced", member=old, previous=old))
            self.members[self.members.index(old)] = new
            if self.leader == old:
                self.leader = new
            self._forget(old)
            out.append(self._line(ts, "member_joined", member=new))
            self._transition(out, ts, "PreparingRebalance", "static_replacement")
            ts = self._complete(out, ts + 1)
        elif r < 0.95:  # a join beyond group.max.size fences the newest member
            mid = self.members[-1]
            ts = self._remove(out, ts, mid, "group_max_size", "leave")
            ts = self._join(out, ts + rng.randint(1000, 10000))
        elif r < 0.97:  # everyone leaves; the group is deleted and comes back later
            for mid in list(self.members):
                ts += rng.randint(10, 500)
                ts = self._remove(out, ts, mid, "left", "leave")
            self.generation += 1
            self._transition(out, ts + 10, "Dead", "deleted")
            out.append(self._line(ts + 10, "group_deleted"))
            self.exists = False
            ts += rng.randint(60000, 3600000)
        else:  # a quiet restart of the leader: rejoin triggers a rebalance, nothing moves
            self._transition(out, ts, "PreparingRebalance", "leader_rejoin")
            ts = self._complete(out, ts)
        return out, ts


class _Emitter:
    """Per-worker sequence numbers (one simulated coordinator process per worker)."""

    def __init__(self) -> None:
        self.seq = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


def _work(job: tuple[int, int, int, int, str, int, int, int, bool]) -> tuple[int, float]:
    """Simulate groups [first, first+count) until about `events` lines are written; returns (lines written,
    seconds spent rolling files into Parquet)."""
    worker, first, count, events, out, start_ms, seed, max_bytes, parquet = job
    rng = random.Random(seed * 1000003 + worker)
    emitter = _Emitter()
    writer = _Writer(Path(out), start_ms + worker, max_bytes, parquet)
    groups = [_Group(f"group-{first + i:05d}", rng, emitter) for i in range(count)]
    span = 24 * 3600 * 1000  # groups are born during the first day, storms follow
    heap = [(start_ms + rng.randrange(span), i) for i in range(count)]
    heapq.heapify(heap)
    while writer.events < events and heap:
        ts, i = heapq.heappop(heap)
        lines, end = groups[i].episode(ts)
        writer.add(lines)
        heapq.heappush(heap, (end + int(rng.expovariate(1 / 900_000)) + 1, i))
    writer.close()
    return writer.events, writer.roll_seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--out", required=True, type=Path, help="writes <out>/journal/*.jsonl (replaces old files)"
    )
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start-ms", type=int, default=1_763_812_000_000)
    p.add_argument(
        "--file-max-bytes",
        type=int,
        default=None,
        help="rotate files at this size (default: 256 MiB for jsonl, the coordinator's 64 MiB for parquet)",
    )
    p.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default="jsonl",
        help="parquet: each worker rolls every file it closes with the coordinator's own roll function",
    )
    args = p.parse_args(argv)
    parquet = args.format == "parquet"
    max_bytes = args.file_max_bytes or ((64 if parquet else 256) << 20)

    journal = args.out / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    for old in (*journal.glob("*.jsonl"), *journal.glob("*.parquet")):
        old.unlink()
    workers = max(1, min(args.workers, args.groups))
    jobs = []
    for w in range(workers):
        first = args.groups * w // workers
        count = args.groups * (w + 1) // workers - first
        events = args.events * (w + 1) // workers - args.events * w // workers
        jobs.append((w, first, count, events, str(journal), args.start_ms, args.seed, max_bytes, parquet))
    t0 = time.perf_counter()
    if workers == 1:
        results = [_work(jobs[0])]
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_work, jobs)
    secs = time.perf_counter() - t0
    events = sum(n for n, _ in results)
    files = [*journal.glob("*.jsonl"), *journal.glob("*.parquet")]
    size = sum(f.stat().st_size for f in files)
    print(
        f"wrote {events:,} events for {args.groups:,} groups to {journal} "
        f"({size / 1e9:.2f} GB, {size / max(events, 1):.0f} bytes/event, {args.format}) in {secs:.1f}s",
        file=sys.stderr,
    )
    if parquet:
        roll = sum(s for _, s in results)
        print(
            f"roll: {roll:.1f}s of worker time ({events / max(roll, 1e-9):,.0f} events/s per core), "
            "included above",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
