"""KIP-848 APIs with the authorizer on: READ on the group and DESCRIBE on the subscribed topics for
ConsumerGroupHeartbeat, DESCRIBE on each group for ConsumerGroupDescribe (Kafka's KafkaApis checks)."""

from __future__ import annotations

import uuid

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import offset_commit as oc
from groupcoord.protocol.messages import offset_fetch as of
from groupcoord.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.messages.metadata import MetadataRequest
from tests.integration.security_fixture import SecureServer, scram_login, start_secure_server
from tests.integration.test_acls import USERS, create_acls

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(120)]
GROUP_DENIED, TOPIC_DENIED = 30, 29


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(
        tmp_path_factory.mktemp("cg-acls"),
        "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users", "User:admin",
        "--group-consumer-assignment-interval-ms", "0",
        "--topic", "hidden-cg:1",
        users=USERS,
    )  # fmt: skip
    yield s
    s.srv.kill()


def join(c, group: str, topics: tuple[str, ...]):  # type: ignore[no-untyped-def]
    req = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=f"{group}-m",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=topics,
        topic_partitions=(),
    )
    return c.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req)


def test_heartbeat_and_describe_need_the_group_and_topic_acls(secure: SecureServer) -> None:
    create_acls(secure.sasl_plain)  # carol: READ on groups team-*, not team-secret; READ on topic secure
    carol, _, _ = scram_login(secure.sasl_plain, "carol-secret", user="carol")
    mallory, _, _ = scram_login(secure.sasl_plain, "mallory-secret", user="mallory")
    try:
        r = join(carol, "team-cg", ("secure",))
        assert (r.error_code, r.member_epoch) == (0, 1)
        assert len(r.assignment.topic_partitions[0].partitions) == 2
        denied = join(carol, "team-cg2", ("secure", "elsewhere"))
        assert denied.error_code == TOPIC_DENIED and "elsewhere" in denied.error_message
        assert join(carol, "team-secret", ("secure",)).error_code == GROUP_DENIED
        assert join(mallory, "team-cg", ("secure",)).error_code == GROUP_DENIED
        d = carol.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE,
            1,
            ConsumerGroupDescribeRequest(
                group_ids=("team-cg", "team-cg2", "team-secret"), include_authorized_operations=True
            ),
        )
        ok, missing, secret = d.groups
        assert (ok.error_code, ok.group_state, len(ok.members)) == (0, "Stable", 1)
        assert ok.authorized_operations & (1 << 3)  # READ
        assert missing.error_code == 69  # the denied heartbeat created nothing
        assert (secret.error_code, secret.members) == (GROUP_DENIED, ())
        d = mallory.request(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=("team-cg",))
        )
        assert (d.groups[0].error_code, d.groups[0].members) == (GROUP_DENIED, ())
    finally:
        carol.close()
        mallory.close()


def test_a_regex_resolves_only_to_topics_the_member_may_describe(secure: SecureServer) -> None:
    """Kafka's TopicRegexResolver drops the topics the principal may not DESCRIBE: carol's `secure.*` gets
    `secure` (READ implies DESCRIBE) and never `secure-hidden`."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.integration.test_acls import sasl

    create_acls(secure.sasl_plain)
    admin = AdminClient(sasl(secure.sasl_plain, "admin", "admin-secret"))
    for f in admin.create_topics([NewTopic("secure-hidden", 3, 1)]).values():
        try:
            f.result(15)
        except Exception as exc:  # created by an earlier run of this module's server: fine
            assert "TOPIC_ALREADY_EXISTS" in str(exc)
    carol, _, _ = scram_login(secure.sasl_plain, "carol-secret", user="carol")
    admin_conn, _, _ = scram_login(secure.sasl_plain, "admin-secret", user="admin")
    try:
        req = ConsumerGroupHeartbeatRequest(
            group_id="team-rx",
            member_id="team-rx-m",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=(),
            subscribed_topic_regex="secure.*",
            topic_partitions=(),
        )
        r = carol.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, req)
        assert r.error_code == 0, r.error_message
        assert [len(tp.partitions) for tp in r.assignment.topic_partitions] == [2]
        # the admin (a super user) resolving the same regex sees both topics
        sup = ConsumerGroupHeartbeatRequest(
            group_id="admin-rx",
            member_id="admin-rx-m",
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_names=(),
            subscribed_topic_regex="secure.*",
            topic_partitions=(),
        )
        r = admin_conn.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, sup)
        assert r.error_code == 0, r.error_message
        assert sorted(len(tp.partitions) for tp in r.assignment.topic_partitions) == [2, 3]
    finally:
        carol.close()
        admin_conn.close()


def test_offsets_by_topic_id_answer_an_unknown_id_before_the_acl_check(secure: SecureServer) -> None:
    """OffsetCommit/OffsetFetch v10 (Kafka's KafkaApis): an id the broker does not know is UNKNOWN_TOPIC_ID, a
    known topic the principal may not READ / DESCRIBE is TOPIC_AUTHORIZATION_FAILED, each keyed by its id."""
    create_acls(secure.sasl_plain)  # carol: READ on groups team-* and on topic secure, nothing on hidden-cg
    admin, _, _ = scram_login(secure.sasl_plain, "admin-secret", user="admin")
    carol, _, _ = scram_login(secure.sasl_plain, "carol-secret", user="carol")
    nowhere = uuid.UUID(int=12345)
    try:
        ids = {
            t.name: t.topic_id
            for t in admin.request(ApiKey.METADATA, 12, MetadataRequest(topics=None)).topics
        }
        r = join(carol, "team-ids", ("secure",))
        assert r.error_code == 0
        asked = (ids["secure"], ids["hidden-cg"], nowhere)
        commit = oc.OffsetCommitRequest(
            group_id="team-ids",
            generation_id_or_member_epoch=r.member_epoch,
            member_id="team-ids-m",
            topics=tuple(
                oc.OffsetCommitRequestTopic(
                    topic_id=t,
                    partitions=(oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=3),),
                )
                for t in asked
            ),
        )
        done = carol.request(ApiKey.OFFSET_COMMIT, 10, commit)
        assert {t.topic_id: t.partitions[0].error_code for t in done.topics} == {
            ids["secure"]: 0,
            ids["hidden-cg"]: TOPIC_DENIED,
            nowhere: ErrorCode.UNKNOWN_TOPIC_ID,
        }
        # the group's ACL comes first: every topic, the unknown id too, is GROUP_AUTHORIZATION_FAILED
        mallory, _, _ = scram_login(secure.sasl_plain, "mallory-secret", user="mallory")
        try:
            refused = mallory.request(ApiKey.OFFSET_COMMIT, 10, commit)
        finally:
            mallory.close()
        assert {t.topic_id: t.partitions[0].error_code for t in refused.topics} == dict.fromkeys(
            asked, GROUP_DENIED
        )
        group = of.OffsetFetchRequestGroup(
            group_id="team-ids",
            member_id="team-ids-m",
            member_epoch=r.member_epoch,
            topics=tuple(of.OffsetFetchRequestTopics(topic_id=t, partition_indexes=(0,)) for t in asked),
        )
        (g,) = carol.request(ApiKey.OFFSET_FETCH, 10, of.OffsetFetchRequest(groups=(group,))).groups
        got = {t.topic_id: (t.partitions[0].committed_offset, t.partitions[0].error_code) for t in g.topics}
        assert got == {
            ids["secure"]: (3, 0),
            ids["hidden-cg"]: (-1, TOPIC_DENIED),
            nowhere: (-1, ErrorCode.UNKNOWN_TOPIC_ID),
        }
    finally:
        admin.close()
        carol.close()
