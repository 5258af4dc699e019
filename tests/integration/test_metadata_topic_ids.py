"""Metadata by topic id (issue 10, defect 2).

The Java AdminClient's `describeTopics(TopicCollection.ofTopicIds(...))` sends Metadata v12 with the id and
an empty name; kafka-python's `describe_topics([uuid])` sends the id with a null name. Kafka looks such
topics up by id (names are ignored once any id is set) and answers an unknown id UNKNOWN_TOPIC_ID with the
id echoed and a null name.
"""

from __future__ import annotations

import uuid

import pytest
from kafka.admin import KafkaAdminClient

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

UNKNOWN = uuid.UUID("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")


@pytest.fixture
def raw(groupcoord_server):  # type: ignore[no-untyped-def]
    c = RawClient(groupcoord_server.host, groupcoord_server.port)
    yield c
    c.close()


def topic_ids(raw: RawClient, *names: str) -> dict[str, uuid.UUID]:
    """Create the topics (Metadata auto-creation) and return their ids."""
    md = raw.request(3, 12, MetadataRequest(topics=tuple(MetadataRequestTopic(name=n) for n in names)))
    assert all(t.error_code == 0 for t in md.topics), md.topics
    return {t.name: t.topic_id for t in md.topics}


@pytest.mark.parametrize("name", ["", None], ids=["empty-name", "null-name"])
def test_metadata_v12_by_id_finds_the_topic(raw: RawClient, name: str | None) -> None:
    ids = topic_ids(raw, "by-id", "other")
    md = raw.request(3, 12, MetadataRequest(topics=(MetadataRequestTopic(topic_id=ids["by-id"], name=name),)))
    assert [(t.error_code, t.name, t.topic_id, len(t.partitions)) for t in md.topics] == [
        (0, "by-id", ids["by-id"], 1)
    ]


def test_metadata_v12_unknown_id_gets_unknown_topic_id_with_the_id_echoed(raw: RawClient) -> None:
    ids = topic_ids(raw, "known")
    md = raw.request(
        3,
        12,
        MetadataRequest(
            topics=(
                MetadataRequestTopic(topic_id=UNKNOWN, name=""),
                MetadataRequestTopic(topic_id=ids["known"], name=None),
            )
        ),
    )
    by_id = {t.topic_id: t for t in md.topics}
    assert set(by_id) == {UNKNOWN, ids["known"]}
    assert (by_id[UNKNOWN].error_code, by_id[UNKNOWN].name, by_id[UNKNOWN].partitions) == (
        ErrorCode.UNKNOWN_TOPIC_ID,
        None,
        (),
    )
    assert (by_id[ids["known"]].error_code, by_id[ids["known"]].name) == (0, "known")


def test_metadata_by_id_does_not_auto_create(raw: RawClient, groupcoord_server) -> None:
    def names() -> set[str]:
        return {t.name for t in raw.request(3, 12, MetadataRequest(topics=None)).topics}

    before = names()  # a shared server holds other tests' topics too
    md = raw.request(3, 12, MetadataRequest(topics=(MetadataRequestTopic(topic_id=UNKNOWN, name=""),)))
    assert [t.error_code for t in md.topics] == [ErrorCode.UNKNOWN_TOPIC_ID]
    assert "__consumer_offsets" in before
    assert names() == before


def test_metadata_v10_without_a_name_is_an_invalid_request(raw: RawClient) -> None:
    """Before v12 Kafka refuses a null name ("Topic name can not be null for version 10")."""
    md = raw.request(3, 10, MetadataRequest(topics=(MetadataRequestTopic(topic_id=UNKNOWN, name=None),)))
    assert [t.error_code for t in md.topics] == [ErrorCode.INVALID_REQUEST]


def test_kafka_python_describe_topics_by_id(groupcoord_server, raw: RawClient) -> None:
    ids = topic_ids(raw, "described")
    admin = KafkaAdminClient(bootstrap_servers=groupcoord_server.bootstrap)
    try:
        (topic,) = admin.describe_topics([ids["described"]])
    finally:
        admin.close()
    assert (topic["name"], topic["error_code"], len(topic["partitions"])) == ("described", 0, 1)
