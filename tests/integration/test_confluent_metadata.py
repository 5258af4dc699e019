"""librdkafka's all-topics Metadata v12 (issue 10, defect 1) and what depends on it.

librdkafka 2.12-2.16 reserves a 4-byte array length for the topics of an all-topics MetadataRequest v12, writes
the 1-byte null varint into it and sends the other 3 bytes along, so the body carries 3 bytes after its last
field. Kafka's request parser reads the fields of the version and ignores the rest; so must we. Without it
`AdminClient.list_topics()` fails with _TRANSPORT and a regex subscription never gets an assignment.
"""

from __future__ import annotations

import re
import struct

import confluent_kafka
import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.protocol.codec import decode_response
from groupcoord.protocol.messages.metadata import MetadataRequest
from tests.integration.helpers import PollingThread, RawClient, wait_for_sync
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topics(admin: AdminClient, topics: dict[str, int]) -> None:
    futures = admin.create_topics([NewTopic(name, n, 1) for name, n in topics.items()])
    for f in futures.values():
        f.result(15)


def librdkafka_metadata_v12_all_topics(correlation_id: int) -> bytes:
    """The frame librdkafka 2.16 sends for `list_topics()`, byte for byte as captured from the client:
    header v2 (client id "rdkafka", no tags), then topics = null (varint 0), the 3 spare bytes of the
    reserved array length (zeros), AllowAutoTopicCreation = true, IncludeTopicAuthorizedOperations = false,
    no tags. Kafka reads the first four body bytes as the fields of v12 and ignores the last three."""
    header = struct.pack(">hhih", 3, 12, correlation_id, 7) + b"rdkafka" + b"\x00"
    body = b"\x00" + b"\x00\x00\x00" + b"\x01\x00\x00"
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


@pytest.mark.owns_server
def test_librdkafka_metadata_v12_frame_with_spare_bytes_is_answered(groupcoord_server) -> None:
    topic = unique("spare-bytes")  # a shared server keeps other tests' topics
    admin = admin_client(groupcoord_server.bootstrap)
    create_topics(admin, {topic: 3})
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        raw.send_raw(librdkafka_metadata_v12_all_topics(41))
        corr, resp = decode_response(raw.read_frame(), 3, 12)
        assert corr == 41
        assert {t.name: len(t.partitions) for t in resp.topics}[topic] == 3
        # the connection stays open for the next request
        again = raw.request(3, 12, MetadataRequest(topics=None))
        assert topic in {t.name for t in again.topics}
    finally:
        raw.close()
    assert groupcoord_server.alive()


def test_confluent_list_topics_lists_every_topic(groupcoord_server) -> None:
    orders, payments = unique("lt-orders"), unique("lt-payments")  # a shared server keeps other tests' topics
    admin = admin_client(groupcoord_server.bootstrap)
    create_topics(admin, {orders: 4, payments: 1})
    md = admin.list_topics(timeout=60)
    assert {orders, payments} <= set(md.topics)
    assert len(md.topics[orders].partitions) == 4
    assert md.topics[orders].error is None
    assert list(md.brokers) == [md.controller_id]


def test_confluent_version_sends_the_padded_request(groupcoord_server) -> None:
    """Documents why the tests above matter: the installed librdkafka is one of the padding versions (or a
    later one); the raw frame test pins the shape whatever is installed."""
    version = tuple(int(x) for x in re.findall(r"\d+", confluent_kafka.libversion()[0])[:2])
    assert version >= (2, 12), confluent_kafka.libversion()


def test_confluent_regex_subscription_gets_the_matching_topics(groupcoord_server) -> None:
    prefix = unique("rx")  # a shared server keeps other tests' topics: match only this test's
    eu, us = f"{prefix}-orders-eu", f"{prefix}-orders-us"
    admin = admin_client(groupcoord_server.bootstrap)
    create_topics(admin, {eu: 2, us: 1, f"{prefix}-payments": 2})
    config = {
        "bootstrap.servers": groupcoord_server.bootstrap,
        "group.id": unique("regex-group"),
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
        "enable.auto.commit": False,
        "log_level": 0,
    }

    def make() -> Consumer:
        c = Consumer(config)
        c.subscribe([f"^{prefix}-orders-.*"])
        return c

    def snapshot(c: Consumer) -> frozenset[tuple[str, int]]:
        return frozenset((tp.topic, tp.partition) for tp in c.assignment())

    t = PollingThread(make, lambda c: c.poll(0.1), snapshot, name="ck-regex")
    t.wait_ready()
    try:
        want = {(eu, 0), (eu, 1), (us, 0)}
        wait_for_sync(lambda: t.state == want, 30, f"assignment {want}, have {t.state}")
    finally:
        t.stop(lambda c: c.close())
