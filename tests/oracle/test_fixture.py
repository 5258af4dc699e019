"""The oracle fixture itself: Kafka 4.4 and groupcoord both serve groups and list a created topic at once."""

from __future__ import annotations

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.oracle.targets import Target

pytestmark = pytest.mark.integration


def test_target_serves_groups_and_lists_created_topic(oracle_target: Target) -> None:
    topic = oracle_target.unique("fixture")
    oracle_target.create_topic(topic, 3)
    oracle_target.create_topic(topic, 3)  # idempotent: TOPIC_ALREADY_EXISTS is fine
    oracle_target.wait_coordinator(oracle_target.unique("group"))
    c = oracle_target.raw()
    try:
        req = MetadataRequest(topics=(MetadataRequestTopic(name=topic),), allow_auto_topic_creation=False)
        t = c.request(ApiKey.METADATA, 12, req).topics[0]
        assert (t.error_code, t.name, sorted(p.partition_index for p in t.partitions)) == (
            0,
            topic,
            [0, 1, 2],
        )
    finally:
        c.close()
