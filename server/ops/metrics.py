"""Prometheus metrics computed at scrape time from the coordinator's in-memory state.

Nothing here runs per request except `RequestMetrics.request_done` (a dict increment and a bucket search) and
`JournalMetrics.on_event` (one dict look-up per group event). Lag, group counts and offsets are read from the
state machine and the log when Prometheus scrapes, so an idle coordinator pays nothing for them.

Names: consumer lag uses kafka_exporter's names and labels (dashboards, alert rules and KEDA scalers keyed on
them work unchanged); coordinator metrics translate Kafka's `group-coordinator-metrics` as
`kafka_server_group_coordinator_metrics_<name with _>` (what jmx_exporter's stock `kafka.server<type=..>` rule
yields); what only we have is `groupcoord_*`. docs/operations.md has the mapping tables.
"""

from __future__ import annotations

import bisect
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import decode_response
from groupcoord.protocol.columns import Columns
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.share.partition import ACQUIRED, TERMINAL

if TYPE_CHECKING:
    from groupcoord.server.coordinator.shard import GroupCoordinatorShard
    from groupcoord.server.log.manager import LogManager
    from groupcoord.server.share.service import ShareService

KAFKA = "kafka_server_group_coordinator_metrics_"
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Empty", "Dead")

#: request latency buckets (seconds): parked JoinGroups can take a rebalance timeout, heartbeats microseconds
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                   10, 30, 60, 300)  # fmt: skip
#: rebalance duration buckets (seconds): from PreparingRebalance to Stable/Empty
REBALANCE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class StateSource(Protocol):
    """What the collector reads: the broker's state machine, log manager and loading flag."""

    machine: GroupCoordinatorShard | None
    logs: LogManager | None
    loading: bool
    load_ms: int | None
    #: the share partitions (server/share), for the share-group metrics
    share: ShareService | None


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class Histogram:
    """Cumulative-at-export bucket counts; `observe` is one bisect and two additions."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        out, running = [], 0
        for bound, n in zip((*map(floatToGoString, self.bounds), "+Inf"), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


class RequestMetrics:
    """Requests answered, by API and error code, and their latency (the dispatcher's observer).

    The error code is the response's top-level `error_code`; responses without one (OffsetCommit, Produce,
    Fetch, ListOffsets, DescribeGroups, DeleteGroups...) count the first non-zero code of their per-group or
    per-partition entries, else NONE. A response the broker never sends (the connection closed instead) is not
    counted.
    """

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.latency: dict[str, Histogram] = {}
        self.offsets_committed = 0
        self._prebuilt_errors: dict[bytes, str] = {}

    def request_done(self, api_key: int, version: int, response: object, started: float) -> None:
        elapsed = time.perf_counter() - started
        api = _api_name(api_key)
        if isinstance(response, bytes):
            error = self._prebuilt_error(api_key, version, response)
        else:
            error = _error_name(_error_of(response))
            if api_key == ApiKey.OFFSET_COMMIT:
                self.offsets_committed += _committed_partitions(response)
        self.requests[(api, error)] += 1
        hist = self.latency.get(api)
        if hist is None:
            hist = self.latency[api] = Histogram(LATENCY_BUCKETS)
        hist.observe(elapsed)

    def _prebuilt_error(self, api_key: int, version: int, frame: bytes) -> str:
        """Pre-encoded answers (Heartbeat) are few distinct frames: decode each once."""
        error = self._prebuilt_errors.get(frame)
        if error is None:
            try:
                _, body = decode_response(frame[4:], api_key, version)
                error = _error_name(_error_of(body))
            except Exception:
                error = "UNKNOWN"
            self._prebuilt_errors[frame] = error
        return error

    def collect(self) -> Iterator[Metric]:
        req = CounterMetricFamily(
            "groupcoord_requests", "Requests answered, by API and Kafka error code", labels=("api", "error")
        )
        for (api, error), n in sorted(self.requests.items()):
            req.add_metric((api, error), n)
        yield req
        lat = HistogramMetricFamily(
            "groupcoord_request_latency_seconds",
            "Time from a request's arrival to its answer, per API (parked Join/SyncGroups included)",
            labels=("api",),
        )
        for api, hist in sorted(self.latency.items()):
            lat.add_metric((api,), hist.buckets(), hist.total)
        yield lat
        commits = CounterMetricFamily(
            KAFKA + "offset_commit_count", "Offsets committed (partitions answered NONE in OffsetCommit)"
        )
        commits.add_metric((), self.offsets_committed)
        yield commits


def _error_of(response: object) -> int:
    code = getattr(response, "error_code", None)
    if code is not None:
        return int(code)
    for name in ("groups", "results", "topics", "responses"):
        for item in getattr(response, name, None) or ():
            code = getattr(item, "error_code", None)
            if code:
                return int(code)
            parts = getattr(item, "partitions", None) or ()
            if type(parts) is Columns:  # (partition, error) columns: an OffsetCommit answer (issue 39)
                code = next((e for e in parts.cols[1] if e), 0)
                if code:
                    return int(code)
                continue
            for part in parts:
                code = getattr(part, "error_code", None)
                if code:
                    return int(code)
    return 0


def _committed_partitions(response: object) -> int:
    n = 0
    for topic in getattr(response, "topics", None) or ():
        parts = topic.partitions
        if type(parts) is Columns:  # (partition, error) columns (issue 39)
            n += parts.cols[1].count(0)
        else:
            n += sum(1 for part in parts if part.error_code == 0)
    return n


class JournalMetrics:
    """Rebalances, their duration and cause, static replacements and SkipAssignment uses, from group events.

    A rebalance (docs/journal.md) runs from a `state_change` to PreparingRebalance until the next one to Stable
    or Empty; its reason is that of the transition that started it.
    """

    def __init__(self) -> None:
        self.started: dict[str, tuple[int, str]] = {}  # group -> (ts ms, reason) of the open rebalance
        self.rebalances: Counter[tuple[str, str]] = Counter()  # (group, reason)
        self.completed = 0  # Kafka's group-completed-rebalance-count: CompletingRebalance -> Stable
        self.duration: dict[str, Histogram] = {}  # reason -> histogram
        self.last_duration: dict[str, float] = {}
        self.last_end_ts: dict[str, float] = {}
        self.static_replacements: Counter[str] = Counter()
        self.skip_assignment: Counter[str] = Counter()
        self.offsets_expired = 0

    def on_event(self, event: dict) -> None:
        kind = event.get("event")
        group = event.get("group") or ""
        if kind == "state_change":
            to = event.get("state_to")
            if to == "PreparingRebalance":
                if group not in self.started:
                    reason = str(event.get("reason"))
                    self.started[group] = (int(event.get("ts") or 0), reason)
                    self.rebalances[(group, reason)] += 1
            elif to in ("Stable", "Empty", "Dead"):
                if to == "Stable" and event.get("state_from") == "CompletingRebalance":
                    self.completed += 1
                begun = self.started.pop(group, None)
                if begun is not None and to != "Dead":
                    seconds = max(int(event.get("ts") or 0) - begun[0], 0) / 1000
                    hist = self.duration.get(begun[1])
                    if hist is None:
                        hist = self.duration[begun[1]] = Histogram(REBALANCE_BUCKETS)
                    hist.observe(seconds)
                    self.last_duration[group] = seconds
                    self.last_end_ts[group] = int(event.get("ts") or 0) / 1000
        elif kind == "static_rejoin":
            self.static_replacements[group] += 1
            if event.get("skip_assignment"):
                self.skip_assignment[group] += 1
        elif kind == "member_removed" and event.get("reason") == "static_replaced":
            self.static_replacements[group] += 1
        if kind == "group_deleted":
            self.forget(group)

    def forget(self, group: str) -> None:
        """A deleted group's per-group series go away with it (bounded cardinality)."""
        self.started.pop(group, None)
        self.last_duration.pop(group, None)
        self.last_end_ts.pop(group, None)
        self.static_replacements.pop(group, None)
        self.skip_assignment.pop(group, None)
        for key in [k for k in self.rebalances if k[0] == group]:
            del self.rebalances[key]

    def collect(self) -> Iterator[Metric]:
        reb = CounterMetricFamily(
            "groupcoord_group_rebalances",
            "Rebalances started, per group and cause",
            labels=("consumergroup", "reason"),
        )
        for (group, reason), n in sorted(self.rebalances.items()):
            reb.add_metric((group, reason), n)
        yield reb
        done = CounterMetricFamily(
            KAFKA + "group_completed_rebalance_count", "Rebalances completed (CompletingRebalance to Stable)"
        )
        done.add_metric((), self.completed)
        yield done
        dur = HistogramMetricFamily(
            "groupcoord_rebalance_duration_seconds",
            "From PreparingRebalance to Stable or Empty, by the cause that started it",
            labels=("reason",),
        )
        for reason, hist in sorted(self.duration.items()):
            dur.add_metric((reason,), hist.buckets(), hist.total)
        yield dur
        last = GaugeMetricFamily(
            "groupcoord_group_last_rebalance_duration_seconds",
            "Duration of the group's last finished rebalance",
            labels=("consumergroup",),
        )
        ago = GaugeMetricFamily(
            "groupcoord_group_last_rebalance_timestamp_seconds",
            "When the group's last rebalance finished (epoch seconds; time() minus this is "
            "the clients' last-rebalance-seconds-ago)",
            labels=("consumergroup",),
        )
        for group, seconds in sorted(self.last_duration.items()):
            last.add_metric((group,), seconds)
            ago.add_metric((group,), self.last_end_ts[group])
        yield last
        yield ago
        static = CounterMetricFamily(
            "groupcoord_group_static_member_replacements",
            "Static members replaced by a rejoin of the same group.instance.id",
            labels=("consumergroup",),
        )
        for group, n in sorted(self.static_replacements.items()):
            static.add_metric((group,), n)
        yield static
        skip = CounterMetricFamily(
            "groupcoord_group_skip_assignment",
            "Static leader rejoins answered with SkipAssignment (JoinGroup v9+)",
            labels=("consumergroup",),
        )
        for group, n in sorted(self.skip_assignment.items()):
            skip.add_metric((group,), n)
        yield skip
        expired = CounterMetricFamily(
            KAFKA + "offset_expiration_count", "Committed offsets removed by retention"
        )
        expired.add_metric((), self.offsets_expired)
        yield expired


class StateCollector(Collector):
    """Lag (kafka_exporter names), group counts and offsets, read from the live state at scrape time."""

    def __init__(self, source: StateSource, partition_lag: bool = True) -> None:
        self.source = source
        self.partition_lag = partition_lag

    def collect(self) -> Iterator[Metric]:
        yield from self._topics_and_lag()
        yield from self._share_partitions()

    def _share_partitions(self) -> Iterator[Metric]:
        """KIP-932 share partitions: Kafka's SharePartitionMetrics InFlightMessageCount (SPEO + 1 - SPSO), and
        ours: the start offset, the records now acquired, and the lag as DescribeShareGroupOffsets computes it
        (high watermark - SPSO - records at or above SPSO already acknowledged or archived), per partition
        (unless per-partition lag is off) and summed per group and topic."""
        src = self.source
        labels = ("group", "topic", "partition")
        in_flight = GaugeMetricFamily(
            "kafka_server_sharepartitionmetrics_inflightmessagecount",
            "Records in a share partition's in-flight window (Kafka's SharePartitionMetrics InFlightMessageCount)",
            labels=labels,
        )
        start = GaugeMetricFamily(
            "groupcoord_share_partition_start_offset", "Share-partition start offset (SPSO)", labels=labels
        )
        acquired = GaugeMetricFamily(
            "groupcoord_share_partition_acquired_records", "Records locked by a consumer now", labels=labels
        )
        lag = GaugeMetricFamily(
            "groupcoord_share_partition_lag",
            "High watermark - SPSO - records done above SPSO (DescribeShareGroupOffsets' Lag)",
            labels=labels,
        )
        lag_sum = GaugeMetricFamily(
            "groupcoord_share_group_lag_sum",
            "Sum of a share group's lag on a topic",
            labels=("group", "topic"),
        )
        share, logs = src.share, src.logs
        if share is not None and logs is not None:
            names = {info.topic_id.hex: name for name, info in logs.topics().items()}
            sums: Counter[tuple[str, str]] = Counter()
            for (group, tid, p), sp in sorted(share.partitions.items()):
                topic = names.get(tid)
                plog = logs.partition(topic, p) if topic is not None else None
                if topic is None or plog is None:
                    continue
                done = sum(1 for r in sp.window.values() if r.state in TERMINAL)
                held = sum(1 for r in sp.window.values() if r.state == ACQUIRED)
                value = plog.high_watermark - sp.start - done
                sums[(group, topic)] += value
                if self.partition_lag:
                    key = (group, topic, str(p))
                    in_flight.add_metric(key, sp.in_flight())
                    start.add_metric(key, sp.start)
                    acquired.add_metric(key, held)
                    lag.add_metric(key, value)
            for (group, topic), total in sorted(sums.items()):
                lag_sum.add_metric((group, topic), total)
        yield in_flight
        yield start
        yield acquired
        yield lag
        yield lag_sum

    def _topics_and_lag(self) -> Iterator[Metric]:
        end: dict[tuple[str, int], int] = {}
        npart: dict[str, int] = {}
        yield from self._topics(end, npart)
        families, by_state, groups, offsets = self._group_lag(end, npart)
        yield from families
        yield from self._group_counts(by_state, groups, offsets)

    def _topics(self, end: dict[tuple[str, int], int], npart: dict[str, int]) -> Iterator[Metric]:
        """Brokers, partitions and offsets of every topic; fills `end` (log end by partition) and `npart`."""
        src = self.source
        brokers = GaugeMetricFamily("kafka_brokers", "Number of brokers in the cluster")
        brokers.add_metric((), 1)
        yield brokers
        logs = src.logs
        parts = GaugeMetricFamily(
            "kafka_topic_partitions", "Number of partitions of a topic", labels=("topic",)
        )
        cur = GaugeMetricFamily(
            "kafka_topic_partition_current_offset",
            "Log end offset of a partition",
            labels=("topic", "partition"),
        )
        old = GaugeMetricFamily(
            "kafka_topic_partition_oldest_offset",
            "Log start offset of a partition",
            labels=("topic", "partition"),
        )
        size = GaugeMetricFamily(
            "kafka_log_log_size",
            "Bytes of a partition's log segments (Kafka's kafka.log:type=Log,name=Size)",
            labels=("topic", "partition"),
        )
        if logs is not None:
            for name, info in sorted(logs.topics().items()):
                parts.add_metric((name,), info.partitions)
                npart[name] = info.partitions
                for p in range(info.partitions):
                    marks = logs.watermarks(name, p)
                    if marks is None:
                        continue
                    start, hw = marks
                    end[(name, p)] = hw
                    cur.add_metric((name, str(p)), hw)
                    old.add_metric((name, str(p)), start)
                    plog = logs.partition(name, p)  # the size of a log held here (cluster mode: led here)
                    if plog is not None:
                        size.add_metric((name, str(p)), plog.size_bytes)
        yield parts
        yield cur
        yield old
        yield size

    def _group_lag(
        self, end: dict[tuple[str, int], int], npart: dict[str, int]
    ) -> tuple[list[Metric], Counter[str], int, int]:
        """Classic groups' members, committed offsets and lag (kafka_exporter's names); the classic groups by
        state, their number and the offsets they hold."""
        src = self.source
        machine = src.machine
        members = GaugeMetricFamily(
            "kafka_consumergroup_members", "Members of a consumer group", labels=("consumergroup",)
        )
        offset = GaugeMetricFamily(
            "kafka_consumergroup_current_offset",
            "Committed offset of a group on a partition",
            labels=("consumergroup", "topic", "partition"),
        )
        offset_sum = GaugeMetricFamily(
            "kafka_consumergroup_current_offset_sum",
            "Sum of a group's committed offsets on a topic",
            labels=("consumergroup", "topic"),
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "Log end offset minus the group's committed offset",
            labels=("consumergroup", "topic", "partition"),
        )
        lag_sum = GaugeMetricFamily(
            "kafka_consumergroup_lag_sum",
            "Sum of a group's lag on a topic",
            labels=("consumergroup", "topic"),
        )
        by_state: Counter[str] = Counter()
        groups = offsets = 0
        if machine is not None:
            per_partition = self.partition_lag
            for gid in machine.group_ids():
                g = machine.group(gid)
                if g is None:
                    continue
                groups += 1
                by_state[str(g.state)] += 1
                members.add_metric((gid,), len(g.members))
                committed = machine.committed_offsets(gid)
                offsets += len(committed)
                sums: dict[str, list[int]] = defaultdict(lambda: [0, 0])
                for (topic, p), value in committed.items():
                    acc = sums[topic]
                    acc[0] += value.offset
                    hw = end.get((topic, p))
                    if per_partition:
                        offset.add_metric((gid, topic, str(p)), value.offset)
                    if hw is not None:
                        acc[1] += hw - value.offset
                        if per_partition:
                            lag.add_metric((gid, topic, str(p)), hw - value.offset)
                # kafka_exporter: on a topic the group has committed to, a partition without a committed offset
                # reports current offset -1 and lag -1 (to alert on), counted in the offset sum, not the lag sum
                for topic, acc in sums.items():
                    for p in range(npart.get(topic, 0)):
                        if (topic, p) in committed or (topic, p) not in end:
                            continue
                        acc[0] -= 1
                        if per_partition:
                            offset.add_metric((gid, topic, str(p)), -1)
                            lag.add_metric((gid, topic, str(p)), -1)
                for topic, (osum, lsum) in sums.items():
                    offset_sum.add_metric((gid, topic), osum)
                    lag_sum.add_metric((gid, topic), lsum)
        return [members, offset, offset_sum, lag, lag_sum], by_state, groups, offsets

    def _group_counts(self, by_state: Counter[str], groups: int, offsets: int) -> Iterator[Metric]:
        """Kafka's group and offset counts, by protocol and state; the load time and the loading flag."""
        src = self.source
        machine = src.machine
        consumer_states: Counter[str] = Counter()
        share_states: Counter[str] = Counter()
        if machine is not None:
            consumer_states.update(g.state for g in machine.consumer_manager.groups.values())
            share_states.update(g.state for g in machine.share_manager.groups.values())
        count = GaugeMetricFamily(KAFKA + "group_count", "Groups, by protocol", labels=("protocol",))
        count.add_metric(("classic",), groups)
        count.add_metric(("consumer",), sum(consumer_states.values()))
        count.add_metric(("share",), sum(share_states.values()))
        yield count
        classic = GaugeMetricFamily(
            KAFKA + "classic_group_count", "Classic groups, by state", labels=("state",)
        )
        for state in STATES:
            classic.add_metric((state,), by_state.get(state, 0))
        yield classic
        # Kafka's consumer-group-count and share-group-count, tagged with the state's lowercase name
        consumer = GaugeMetricFamily(
            KAFKA + "consumer_group_count", "KIP-848 consumer groups, by state", labels=("state",)
        )
        for state in ("Empty", "Assigning", "Reconciling", "Stable"):
            consumer.add_metric((state.lower(),), consumer_states.get(state, 0))
        yield consumer
        share = GaugeMetricFamily(
            KAFKA + "share_group_count", "KIP-932 share groups, by state", labels=("state",)
        )
        for state in ("Empty", "Stable"):
            share.add_metric((state.lower(),), share_states.get(state, 0))
        yield share
        noff = GaugeMetricFamily(KAFKA + "offset_count", "Committed offsets held")
        noff.add_metric((), offsets)
        yield noff
        deleted = CounterMetricFamily(
            KAFKA + "offset_deletion_count", "Committed offsets removed by OffsetDelete (API 47)"
        )
        deleted.add_metric((), machine.offsets_deleted if machine is not None else 0)
        yield deleted
        if src.load_ms is not None:
            load = GaugeMetricFamily(KAFKA + "partition_load_time_max", "Milliseconds the state took to load")
            load.add_metric((), src.load_ms)
            yield load
        loading = GaugeMetricFamily("groupcoord_loading", "1 while the coordinator state is still loading")
        loading.add_metric((), 1 if src.loading else 0)
        yield loading
