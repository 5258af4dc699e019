"""The checker of a partition run (issue 43): the clients' history, what the cluster holds after healing, and
the nodes' logs, reported by the names Jepsen's Kafka workloads use.

* **lost-write**: a send the producer saw acknowledged whose value is nowhere in the topic when read back;
* **inconsistent-offset**: an acknowledged value found, but not at the partition and offset its
  acknowledgement named (another value there);
* **duplicate**: a value stored at more than one offset (the idempotent producer must never cause one);
* **lost-commit**: a partition whose committed offset in PostgreSQL, after healing, is below the highest
  commit the group saw acknowledged;
* **committed-offset-backwards**: a member resumed a partition from a committed offset below one
  acknowledged before that assignment;
* **nonmonotonic-poll** / **skipped-poll**: one member's consecutive polls of a partition that go back, or
  jump past records, with no assignment between them (a resume is checked against the committed offset it
  reported);
* **split-brain**: two nodes that each logged taking one shard (a group coordinator) or one partition
  (a leader) at the same lease epoch.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Report:
    counts: dict[str, int] = field(default_factory=dict)
    violations: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, name: str, what: Any) -> None:
        self.violations.setdefault(name, []).append(what)

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())

    def summary(self) -> str:
        names = (
            "lost-write",
            "inconsistent-offset",
            "duplicate",
            "lost-commit",
            "committed-offset-backwards",
            "nonmonotonic-poll",
            "skipped-poll",
            "split-brain",
        )
        parts = [f"{len(self.violations.get(n, []))} {n}" for n in names]
        seen = ", ".join(f"{v} {k}" for k, v in self.counts.items())
        return f"{'; '.join(parts)} (over {seen})"

    def to_json(self) -> str:
        return json.dumps({"ok": self.ok, "counts": self.counts, "violations": self.violations}, indent=1)


def read_history(path: Path) -> list[dict[str, Any]]:
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue  # a line cut by the stop
    return events


def check_writes(report: Report, events: list[dict[str, Any]], stored: dict[tuple[int, int], str]) -> None:
    acked = {e["v"]: (e["p"], e["o"]) for e in events if e["op"] == "produced"}
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for pos, value in stored.items():
        where[value].append(pos)
    report.counts["acknowledged sends"] = len(acked)
    report.counts["records read back"] = len(stored)
    for value, pos in sorted(acked.items()):
        if value not in where:
            report.add("lost-write", {"v": value, "acked_at": pos})
        elif stored.get(pos) != value:
            report.add("inconsistent-offset", {"v": value, "acked_at": pos, "found_at": where[value]})
    for value, positions in sorted(where.items()):
        if len(positions) > 1:
            report.add("duplicate", {"v": value, "at": sorted(positions)})


def check_commits(report: Report, events: list[dict[str, Any]], final: dict[int, int]) -> None:
    high: dict[int, int] = {}
    commits = 0
    for e in events:
        if e["op"] == "committed":
            commits += 1
            high[e["p"]] = max(high.get(e["p"], 0), e["o"])
        elif e["op"] == "assigned" and isinstance(e["committed"], int):
            before = high.get(e["p"], 0)
            if e["committed"] < before:
                report.add(
                    "committed-offset-backwards",
                    {"p": e["p"], "member": e["m"], "resumed": e["committed"], "acked_before": before},
                )
    report.counts["acknowledged commits"] = commits
    for p, offset in sorted(high.items()):
        if final.get(p, -1) < offset:
            report.add("lost-commit", {"p": p, "stored": final.get(p), "highest_acked": offset})


def check_polls(report: Report, events: list[dict[str, Any]]) -> None:
    expect: dict[tuple[int, int], int | None] = {}  # (member, partition) -> the next offset a poll starts at
    polls = 0
    for e in events:
        if e["op"] == "assigned":
            expect[(e["m"], e["p"])] = e["committed"] if isinstance(e["committed"], int) else None
        elif e["op"] == "revoked":
            for p in e["ps"]:
                expect.pop((e["m"], p), None)
        elif e["op"] == "polled":
            polls += 1
            key = (e["m"], e["p"])
            want = expect.get(key)
            if want is not None and e["first"] < want:
                report.add(
                    "nonmonotonic-poll", {"member": e["m"], "p": e["p"], "first": e["first"], "want": want}
                )
            elif want is not None and e["first"] > want:
                report.add("skipped-poll", {"member": e["m"], "p": e["p"], "first": e["first"], "want": want})
            expect[key] = e["last"] + 1
    report.counts["polls"] = polls


_LIST = r"\[([\d, ]*)\]"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def check_split_brain(report: Report, logs: dict[int, str]) -> None:
    owners: dict[tuple[str, Any, int], set[int]] = defaultdict(set)
    for node, text in logs.items():
        for line in text.splitlines():
            if "shards loaded" in line:
                shards, epochs = re.search(f"shards={_LIST}", line), re.search(f"epochs={_LIST}", line)
                if shards and epochs:
                    for s, ep in zip(_ints(shards[1]), _ints(epochs[1]), strict=True):
                        owners[("shard", s, ep)].add(node)
            elif "partition led" in line:
                m = {k: v for k, v in re.findall(r"(\w+)=(\S+)", line)}
                if {"topic", "partition", "epoch"} <= m.keys():
                    owners[("partition", f"{m['topic']}-{m['partition']}", int(m["epoch"]))].add(node)
    report.counts["ownerships logged"] = len(owners)
    for key, nodes in sorted(owners.items(), key=str):
        if len(nodes) > 1:
            report.add(
                "split-brain", {"what": key[0], "key": key[1], "epoch": key[2], "nodes": sorted(nodes)}
            )
