"""Differential runs: one scenario, written once against `Recorder`, runs on Kafka 4.4 and on groupcoord; each
answer goes into a transcript after `normalise` has replaced or dropped what must differ between two servers
(member ids and topic ids become placeholders in order of first appearance; throttle times, error messages,
node ids, hosts, ports and cluster ids are dropped); the two transcripts are compared entry by entry, field by
field, and the first entry that differs fails the test with every field that differs in it.

A scenario is `def scenario(r: Recorder, n: Names) -> None`. It calls `r.call(...)` for a request whose answer
comes at once and `r.start(...)` / `.result()` for one that waits (a JoinGroup that completes when the others
rejoin); `r.note(label, value)` records anything derived (a state polled for). Names (groups, topics) are the
same on both targets (they are separate servers) and new for every run.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import os
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from groupcoord.protocol.codec import decode_response, encode_request
from tests.integration.helpers import RawClient
from tests.oracle.targets import Target

# Dropped everywhere: differ between two servers by nature, or are free text no client decides on.
DROP = frozenset(
    {
        "throttle_time_ms",
        "error_message",
        "node_id",
        "host",
        "port",
        "cluster_id",
        "controller_id",
        "rack",
        "unknown_tags",
    }
)
MEMBER_KEYS = frozenset({"member_id", "leader"})
# KIP-848 epochs (consumer and share groups). Named difference (docs/differences.md, "first epoch"): Kafka 4.4
# starts a new group at epoch 1 (KAFKA-20268), groupcoord at 0, so every positive epoch of a group groupcoord
# created is one lower; a scenario that says so (`Recorder.epoch_shift`) compares them shifted by that one.
EPOCH_KEYS = frozenset(
    {"member_epoch", "group_epoch", "assignment_epoch"}
)  # server-made member ids (classic) and their echoes
UNORDERED = frozenset({"partitions", "partition_indexes"})  # sets on the wire: compared sorted
# Kafka keeps group members in hash maps (ClassicGroup, ConsumerGroup): their order on the wire is arbitrary
UNORDERED_RECORDS = frozenset({"members", "topic_partitions", "groups", "results", "owned"})
_run = itertools.count()


class Names:
    """Group/topic names for one differential run, the same on both targets."""

    def __init__(self, test: str) -> None:
        self.stem = f"{test}-{os.getpid()}-{next(_run)}"

    def __call__(self, what: str) -> str:
        return f"{self.stem}-{what}"


class Conn:
    """A connection whose requests may be pipelined: `send` now, `recv` later, answers in order."""

    def __init__(self, target: Target, client_id: str = "oracle") -> None:
        self.raw = RawClient(target.host, target.port, timeout=60)
        self.client_id = client_id
        self.pending: list[tuple[int, int, int]] = []

    def send(self, api: int, version: int, body: Any) -> None:
        self.raw.correlation += 1
        frame = encode_request(api, version, self.raw.correlation, body, client_id=self.client_id)
        self.raw.send_raw(frame)
        self.pending.append((self.raw.correlation, api, version))

    def recv(self) -> Any:
        corr, api, version = self.pending.pop(0)
        got, resp = decode_response(self.raw.read_frame(), api, version)
        assert got == corr, f"correlation {got}, expected {corr}"
        return resp

    def close(self) -> None:
        self.raw.close()


class Pending:
    def __init__(self, rec: Recorder, conn: Conn, label: str) -> None:
        self.rec, self.conn, self.label = rec, conn, label

    def result(self) -> Any:
        resp = self.conn.recv()
        self.rec.record(self.label, resp)
        return resp


class Recorder:
    """What a scenario talks to: one target, its connections, its transcript."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.entries: list[tuple[str, Any]] = []
        self.ids: dict[Any, str] = {}
        self.conns: list[Conn] = []
        self.epoch_shift = 0  # added to groupcoord's positive KIP-848 epochs (EPOCH_KEYS)

    @property
    def is_kafka(self) -> bool:
        return self.target.name == "kafka"

    def conn(self, client_id: str = "oracle") -> Conn:
        c = Conn(self.target, client_id)
        self.conns.append(c)
        return c

    def start(self, conn: Conn, label: str, api: int, version: int, body: Any) -> Pending:
        conn.send(api, version, body)
        return Pending(self, conn, label)

    def call(self, conn: Conn, label: str, api: int, version: int, body: Any) -> Any:
        return self.start(conn, label, api, version, body).result()

    def record(self, label: str, value: Any) -> None:
        shift = 0 if self.is_kafka else self.epoch_shift
        self.entries.append((label, normalise(value, self.ids, shift=shift)))

    note = record

    def poll(
        self, conn: Conn, api: int, version: int, body: Any, until: Callable[[Any], bool], timeout: float = 60
    ):
        """Send until `until(answer)` (not recorded: a scenario records what it waited for with `note`)."""
        deadline = time.monotonic() + timeout
        while True:
            conn.send(api, version, body)
            resp = conn.recv()
            if until(resp):
                return resp
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.target.name}: condition not met in {timeout}s; last {resp}")
            time.sleep(0.1)

    def close(self) -> None:
        for c in self.conns:
            c.close()


def _placeholder(ids: dict[Any, str], kind: str, value: Any) -> str:
    key = (kind, value)
    if key not in ids:
        ids[key] = f"<{kind}{sum(1 for k in ids if k[0] == kind) + 1}>"
    return ids[key]


def normalise(value: Any, ids: dict[Any, str], key: str = "", shift: int = 0) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: normalise(getattr(value, f.name), ids, f.name, shift)
            for f in dataclasses.fields(value)
            if f.name not in DROP
        }
    if isinstance(value, dict):
        return {k: normalise(v, ids, k, shift) for k, v in value.items() if k not in DROP}
    if isinstance(value, (list, tuple)):
        items = [normalise(v, ids, key, shift) for v in value]
        if key in UNORDERED and all(isinstance(v, int) for v in items):
            items.sort()
        elif key in UNORDERED_RECORDS:
            items.sort(key=repr)
        return items
    if isinstance(value, uuid.UUID):
        return "<no-id>" if value.int == 0 else _placeholder(ids, "topic", value)
    if key in MEMBER_KEYS and isinstance(value, str) and value:
        return _placeholder(ids, "member", value)
    if key in EPOCH_KEYS and isinstance(value, int) and value > 0:
        return value + shift
    if isinstance(value, enum.Enum):
        return value.value
    return value


def differences(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Every leaf where two normalised values differ, as `path: a != b`."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            yield from differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path or '.'}: kafka {a!r} != groupcoord {b!r}"


Scenario = Callable[[Recorder, Names], None]


def run_on(target: Target, scenario: Scenario, names: Names) -> list[tuple[str, Any]]:
    rec = Recorder(target)
    try:
        scenario(rec, names)
    except Exception as e:
        raise AssertionError(f"scenario failed on {target.name} after {rec.entries[-3:]}: {e!r}") from e
    finally:
        rec.close()
    return rec.entries


def run_both(pair: tuple[Target, Target], scenario: Scenario, test: str) -> tuple[list, list]:
    """The scenario on Kafka and on groupcoord at the same time; their two transcripts."""
    names = Names(test)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(run_on, t, scenario, names) for t in pair]
        kafka_t, ours = (f.result() for f in futures)
    return kafka_t, ours


def diff(kafka_t: list, ours: list) -> list[str]:
    """The differences of the first entry that differs (label and fields), or [] when the two agree."""
    for i, ((la, a), (lb, b)) in enumerate(zip(kafka_t, ours, strict=False)):
        found = list(differences(a, b)) if la == lb else [f"label kafka {la!r} != groupcoord {lb!r}"]
        if found:
            return [f"step {i} ({la}):", *found]
    if len(kafka_t) != len(ours):
        return [f"transcripts differ in length: kafka {len(kafka_t)}, groupcoord {len(ours)}"]
    return []


def assert_same(pair: tuple[Target, Target], scenario: Scenario, test: str) -> list:
    kafka_t, ours = run_both(pair, scenario, test)
    found = diff(kafka_t, ours)
    if os.environ.get("GROUPCOORD_ORACLE_DUMP"):
        print(_dump(kafka_t, ours))
    assert not found, "groupcoord differs from Kafka 4.4:\n  " + "\n  ".join(found) + _dump(kafka_t, ours)
    return kafka_t


def _dump(kafka_t: list, ours: list) -> str:
    lines = ["", "kafka transcript:"] + [f"  {label}: {v}" for label, v in kafka_t]
    lines += ["groupcoord transcript:"] + [f"  {label}: {v}" for label, v in ours]
    return "\n".join(lines)[-12000:]
