"""KIP-932 share APIs behind the authorizer (server/apis/authz_share.py): READ on the group for the heartbeat,
ShareFetch and ShareAcknowledge, DESCRIBE on the group for ShareGroupDescribe, DESCRIBE on subscribed topics,
READ on fetched topics (per-partition TOPIC_AUTHORIZATION_FAILED, nothing acquired there)."""

from __future__ import annotations

import pytest

from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.protocol.messages.share_acknowledge import ShareAcknowledgeRequest
from groupcoord.protocol.messages.share_fetch import ShareFetchPartition, ShareFetchRequest, ShareFetchTopic
from groupcoord.protocol.messages.share_group_describe import ShareGroupDescribeRequest
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from tests.integration.security_fixture import SecureServer, scram_login, start_secure_server
from tests.integration.test_acls import sasl

pytestmark = [pytest.mark.integration]
USERS = (("admin", "admin-secret"), ("carol", "carol-secret"), ("mallory", "mallory-secret"))
GROUP_DENIED, TOPIC_DENIED = 30, 29


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(
        tmp_path_factory.mktemp("share-acls"),
        "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users", "User:admin",
        "--topic", "other:1",
        users=USERS,
    )  # fmt: skip
    yield s
    s.srv.kill()


def grant(port: int) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(sasl(port, "admin", "admin-secret"))
    allow, lit = AclPermissionType.ALLOW, ResourcePatternType.LITERAL
    bindings = [
        AclBinding(ResourceType.GROUP, "share-ok", lit, "User:carol", "*", AclOperation.READ, allow),
        AclBinding(ResourceType.TOPIC, "secure", lit, "User:carol", "*", AclOperation.READ, allow),
    ]  # fmt: skip
    for f in admin.create_acls(bindings).values():
        f.result(15)


def test_share_apis_need_group_and_topic_acls(secure: SecureServer) -> None:
    port = secure.sasl_plain
    grant(port)
    admin, _, ok = scram_login(port, "admin-secret", user="admin")
    assert ok.error_code == 0
    ids = {t.name: t.topic_id for t in admin.request(3, 12, MetadataRequest(topics=None)).topics}
    carol, _, ok = scram_login(port, "carol-secret", user="carol")
    assert ok.error_code == 0
    mallory, _, ok = scram_login(port, "mallory-secret", user="mallory")
    assert ok.error_code == 0

    def heartbeat(c, group: str, topics: tuple[str, ...]) -> int:  # type: ignore[no-untyped-def]
        return c.request(76, 1, ShareGroupHeartbeatRequest(group, "m-" + group, 0, None, topics)).error_code

    assert heartbeat(carol, "share-ok", ("secure",)) == 0  # READ on the topic implies DESCRIBE
    assert heartbeat(carol, "share-no", ("secure",)) == GROUP_DENIED
    assert heartbeat(carol, "share-ok", ("other",)) == TOPIC_DENIED
    assert heartbeat(mallory, "share-ok", ("secure",)) == GROUP_DENIED
    described = mallory.request(77, 1, ShareGroupDescribeRequest(group_ids=("share-ok",))).groups[0]
    assert described.error_code == GROUP_DENIED and described.members == ()
    assert admin.request(77, 1, ShareGroupDescribeRequest(group_ids=("share-ok",))).groups[0].error_code == 0

    def fetch(c, group: str, epoch: int = 0):  # type: ignore[no-untyped-def]
        topics = tuple(
            ShareFetchTopic(topic_id=ids[n], partitions=(ShareFetchPartition(partition_index=0),))
            for n in ("secure", "other")
        )
        req = ShareFetchRequest(
            group_id=group, member_id="m1", share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
            max_records=10, batch_size=10, topics=topics,
        )  # fmt: skip
        return c.request(78, 2, req)

    assert fetch(mallory, "share-ok").error_code == GROUP_DENIED
    r = fetch(carol, "share-ok")
    errors = {(t.topic_id, p.partition_index): p.error_code for t in r.responses for p in t.partitions}
    assert r.error_code == 0 and errors == {(ids["secure"], 0): 0, (ids["other"], 0): TOPIC_DENIED}
    ack = ShareAcknowledgeRequest(group_id="share-ok", member_id="m1", share_session_epoch=1)
    assert mallory.request(79, 2, ack).error_code == GROUP_DENIED
    assert carol.request(79, 2, ack).error_code == 0


def test_share_offsets_admin_apis_need_group_and_topic_acls(secure: SecureServer) -> None:
    """DescribeShareGroupOffsets: DESCRIBE on the group and each topic; AlterShareGroupOffsets: READ on the
    group and each topic; DeleteShareGroupOffsets: DELETE on the group, READ on each topic (Kafka's KafkaApis)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    from groupcoord.protocol.messages import alter_share_group_offsets as asgo
    from groupcoord.protocol.messages import delete_share_group_offsets as dsgo
    from groupcoord.protocol.messages import describe_share_group_offsets as dsgof

    port = secure.sasl_plain
    admin = AdminClient(sasl(port, "admin", "admin-secret"))
    allow, lit = AclPermissionType.ALLOW, ResourcePatternType.LITERAL
    bindings = [
        AclBinding(ResourceType.GROUP, "share-adm", lit, "User:carol", "*", AclOperation.READ, allow),
        AclBinding(ResourceType.TOPIC, "secure", lit, "User:carol", "*", AclOperation.READ, allow),
    ]  # fmt: skip
    for f in admin.create_acls(bindings).values():
        f.result(15)
    carol, _, ok = scram_login(port, "carol-secret", user="carol")
    assert ok.error_code == 0
    mallory, _, ok = scram_login(port, "mallory-secret", user="mallory")
    assert ok.error_code == 0

    def alter(c, group: str):  # type: ignore[no-untyped-def]
        topics = tuple(
            asgo.AlterShareGroupOffsetsRequestTopic(
                topic_name=n, partitions=(asgo.AlterShareGroupOffsetsRequestPartition(0, 0),)
            )
            for n in ("secure", "other")
        )
        return c.request(91, 0, asgo.AlterShareGroupOffsetsRequest(group_id=group, topics=topics))

    assert alter(mallory, "share-adm").error_code == GROUP_DENIED
    r = alter(carol, "share-adm")
    errors = {(t.topic_name, p.partition_index): p.error_code for t in r.responses for p in t.partitions}
    assert r.error_code == 0 and errors == {("secure", 0): 0, ("other", 0): TOPIC_DENIED}

    def describe(c, group: str, topics: tuple[str, ...] | None):  # type: ignore[no-untyped-def]
        ts = (
            None
            if topics is None
            else tuple(dsgof.DescribeShareGroupOffsetsRequestTopic(n, (0,)) for n in topics)
        )
        req = dsgof.DescribeShareGroupOffsetsRequest(
            groups=(dsgof.DescribeShareGroupOffsetsRequestGroup(group, ts),)
        )
        return c.request(90, 1, req).groups[0]

    assert describe(mallory, "share-adm", ("secure",)).error_code == GROUP_DENIED
    g = describe(carol, "share-adm", ("secure", "other"))
    got = {t.topic_name: (t.partitions[0].start_offset, t.partitions[0].error_code) for t in g.topics}
    assert g.error_code == 0 and got == {"secure": (0, 0), "other": (-1, TOPIC_DENIED)}
    assert [t.topic_name for t in describe(carol, "share-adm", None).topics] == ["secure"]

    def delete(c, group: str):  # type: ignore[no-untyped-def]
        topics = tuple(dsgo.DeleteShareGroupOffsetsRequestTopic(n) for n in ("secure", "other"))
        return c.request(92, 0, dsgo.DeleteShareGroupOffsetsRequest(group_id=group, topics=topics))

    assert delete(carol, "share-adm").error_code == GROUP_DENIED  # READ is not DELETE
    grant_delete = AclBinding(
        ResourceType.GROUP, "share-adm", lit, "User:carol", "*", AclOperation.DELETE, allow
    )
    for f in admin.create_acls([grant_delete]).values():
        f.result(15)
    r = delete(carol, "share-adm")
    assert r.error_code == 0
    assert {t.topic_name: t.error_code for t in r.responses} == {"secure": 0, "other": TOPIC_DENIED}
