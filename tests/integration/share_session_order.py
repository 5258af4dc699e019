"""One ShareFetch scenario about the order in which a request's three lists take effect, run the same way
against groupcoord and against Apache Kafka 4.4 (tests/integration/test_share_session_order.py).

Kafka (KafkaApis.handleShareFetchRequest, SharePartitionManager.newContext, ShareSession.update): the
request's partitions are added to the share session first and its forgotten partitions removed after; the
piggy-backed acknowledgements are applied before the fetch; the fetch covers the session as it stands after
the update. So a partition that carries its last acknowledgements and is forgotten in the same request (what
franz-go sends when a partition is revoked with acknowledgements pending) has them applied and is then gone:
it is not fetched in that request nor by the next empty ShareFetch.

The scenario returns a normalised outcome per step (partition -> (error, acknowledge error, acquired offsets
with their delivery counts)), so the two servers' outcomes can be compared as equal values. Every record is
produced in a batch of its own so that acquisition (per batch at Kafka) is the same record by record.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchTopic,
    ShareForgottenTopic,
)
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

from .helpers import RawClient

ACCEPT, RELEASE = 1, 2
RECORDS = 10
#: partition -> (error code, acknowledge error code, ((offset, delivery count), ...))
Outcome = dict[int, tuple[int, int, tuple[tuple[int, int], ...]]]


def _setup(bootstrap: str, topic: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        fut.result(60)
    res = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    for fut in admin.incremental_alter_configs([res]).values():
        fut.result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for part in (0, 1):
        for i in range(RECORDS):
            p.produce(topic, value=f"p{part}-{i}".encode(), partition=part)
            assert p.flush(30) == 0  # one batch per record


def _topic_id(c: RawClient, topic: str) -> uuid.UUID:
    deadline = time.monotonic() + 60
    while True:
        md = c.request(3, 12, MetadataRequest(topics=None))
        found = [t.topic_id for t in md.topics if t.name == topic and len(t.partitions) == 2]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "topic never appeared in Metadata"
        time.sleep(0.5)


def _join(c: RawClient, member: str, topic: str, group: str) -> None:
    """A real member (ShareGroupHeartbeat, epoch 0) so that ShareFetch comes from one the group knows."""
    deadline = time.monotonic() + 90
    while True:
        # FindCoordinator first: Kafka creates its offsets topic on the first one, answering NOT_COORDINATOR
        # or COORDINATOR_LOAD_IN_PROGRESS meanwhile
        c.request(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)))
        r = c.request(76, 1, ShareGroupHeartbeatRequest(group, member, 0, None, (topic,)))
        if r.error_code not in (14, 15, 16) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert r.error_code == 0, r


class _Member:
    def __init__(self, c: RawClient, group: str, member: str, tid: uuid.UUID) -> None:
        self.c, self.group, self.member, self.tid, self.epoch = c, group, member, tid, 0

    def fetch(
        self,
        parts: dict[int, tuple[AcknowledgementBatch, ...]],
        forget: tuple[int, ...] = (),
        max_wait_ms: int = 300,
    ) -> Outcome:
        topics = (
            (ShareFetchTopic(self.tid, tuple(ShareFetchPartition(p, 0, acks) for p, acks in parts.items())),)
            if parts
            else ()
        )
        req = ShareFetchRequest(
            group_id=self.group,
            member_id=self.member,
            share_session_epoch=self.epoch,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_records=500,
            batch_size=500,
            topics=topics,
            forgotten_topics_data=(ShareForgottenTopic(self.tid, forget),) if forget else (),
        )
        r = self.c.request(78, 1, req)
        assert r.error_code == 0, r
        self.epoch += 1
        out: Outcome = {}
        for t in r.responses:
            assert t.topic_id == self.tid
            for p in t.partitions:
                got = tuple(
                    (o, a.delivery_count)
                    for a in p.acquired_records
                    for o in range(a.first_offset, a.last_offset + 1)
                )
                out[p.partition_index] = (p.error_code, p.acknowledge_error_code, got)
        return out


def _acks(first: int, last: int, kind: int) -> tuple[AcknowledgementBatch, ...]:
    return (AcknowledgementBatch(first, last, (kind,)),)


def _acquire_everything(m: _Member) -> Outcome:
    """Epoch 0 for both partitions, repeated until every record is held: a share partition's first fetch may
    find it still initialising (Kafka reads its state from the share coordinator). A new epoch-0 session does
    not release what the member already holds, so the union is what the member holds in the end."""
    held: dict[int, dict[int, int]] = {0: {}, 1: {}}
    deadline = time.monotonic() + 90
    while any(len(v) < RECORDS for v in held.values()):
        assert time.monotonic() < deadline, f"records never all acquired: {held}"
        m.epoch = 0
        for p, (err, aerr, got) in m.fetch({0: (), 1: ()}, max_wait_ms=2000).items():
            # a new broker's partition may not be served yet: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
            # UNKNOWN_TOPIC_ID, or (Kafka, while its share coordinator's state topic is still being created)
            # UNKNOWN_SERVER_ERROR from the share partition's initialisation; then the next round asks again
            assert aerr == 0 and err in (0, -1, 3, 6, 100), (p, err, aerr)
            held[p].update(got)
    return {p: (0, 0, tuple(sorted(v.items()))) for p, v in held.items()}


def run(host: str, port: int, topic: str, group: str) -> list[tuple[str, Outcome]]:
    """The scenario on a new `topic` (2 partitions) and share `group`; each step named, with its outcome."""
    _setup(f"{host}:{port}", topic, group)
    c = RawClient(host, port, timeout=90)
    try:
        tid = _topic_id(c, topic)
        member = str(uuid.uuid4())
        _join(c, member, topic, group)
        m = _Member(c, group, member, tid)
        steps: list[tuple[str, Outcome]] = [("acquire all of p0 and p1", _acquire_everything(m))]
        # acknowledgements and forget in one request: p0 accepts 0-4, releases 5-9, and is forgotten
        steps.append(
            ("p0 acked and forgotten", m.fetch({0: _acks(0, 4, ACCEPT) + _acks(5, 9, RELEASE)}, (0,)))
        )
        # the forgotten p0 is not fetched any more, though 5-9 are available again
        steps.append(("empty fetch after the forget", m.fetch({})))
        # acknowledgements before the fetch: p1 releases everything in the request that fetches it again
        steps.append(
            ("p1 released and fetched in one request", m.fetch({1: _acks(0, RECORDS - 1, RELEASE)}, (), 2000))
        )
        # fetch before forget for a partition not in the session: added, then removed, so never fetched
        steps.append(("p0 listed and forgotten in one request", m.fetch({0: ()}, (0,))))
        steps.append(("empty fetch after listing and forgetting p0", m.fetch({})))
        # p0 listed again alone: its released 5-9 come back with delivery count 2
        steps.append(("p0 listed again", m.fetch({0: ()}, (), 2000)))
        return steps
    finally:
        c.close()
