"""ACLs with the authorizer on (issue 18): deny by default, Kafka's error codes, prefixed and literal patterns,
DENY wins, super.users, and ACLs and SCRAM users that survive a restart. Clients: confluent-kafka's
AdminClient (CreateAcls/DescribeAcls as the super user), aiokafka consumers, raw requests for the rest."""

from __future__ import annotations

import asyncio
import time

import pytest

from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
from groupcoord.protocol.messages.describe_groups import DescribeGroupsRequest
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from tests.integration.security_fixture import SecureServer, scram_login, start_secure_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
USERS = (("admin", "admin-secret"), ("carol", "carol-secret"), ("mallory", "mallory-secret"))
GROUP_DENIED, TOPIC_DENIED, CLUSTER_DENIED, SASL_AUTHENTICATION_FAILED = 30, 29, 31, 58


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(
        tmp_path_factory.mktemp("acls"),
        "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users", "User:admin",
        users=USERS,
    )  # fmt: skip
    yield s
    s.srv.kill()


def sasl(port: int, user: str, password: str) -> dict[str, object]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": password,
    }


def create_acls(port: int) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(sasl(port, "admin", "admin-secret"))
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    bindings = [
        AclBinding(ResourceType.GROUP, "team-", ResourcePatternType.PREFIXED, "User:carol", "*", AclOperation.READ, allow),
        AclBinding(ResourceType.GROUP, "team-secret", ResourcePatternType.LITERAL, "User:carol", "*", AclOperation.ALL, deny),
        AclBinding(ResourceType.TOPIC, "secure", ResourcePatternType.LITERAL, "User:carol", "*", AclOperation.READ, allow),
    ]  # fmt: skip
    for f in admin.create_acls(bindings).values():
        f.result(15)


def describe_acl_count(port: int) -> int:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(sasl(port, "admin", "admin-secret"))
    flt = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    return len(admin.describe_acls(flt).result(15))


def consume_and_commit(port: int, user: str, password: str, group: str) -> int:
    """An aiokafka member joins `group`, commits offset 5 and reads it back; errors propagate."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> int:
        consumer = AIOKafkaConsumer(
            "secure",
            bootstrap_servers=f"127.0.0.1:{port}",
            group_id=group,
            enable_auto_commit=False,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username=user,
            sasl_plain_password=password,
        )
        await consumer.start()
        try:
            deadline = time.monotonic() + 60
            while not consumer.assignment() and time.monotonic() < deadline:
                await consumer.getmany(timeout_ms=200)
            await consumer.commit({TopicPartition("secure", 0): 5})
            return await consumer.committed(TopicPartition("secure", 0))
        finally:
            await consumer.stop()

    return asyncio.run(run())


def test_acls_allow_a_principal_and_deny_everyone_else(secure: SecureServer) -> None:
    port = secure.sasl_plain
    create_acls(port)
    assert consume_and_commit(port, "carol", "carol-secret", "team-a") == 5
    from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    with pytest.raises(TopicAuthorizationFailedError):  # no DESCRIBE on the topic: aiokafka stops at Metadata
        consume_and_commit(port, "mallory", "mallory-secret", "team-a")
    with pytest.raises(GroupAuthorizationFailedError):  # DENY beats the prefixed ALLOW
        consume_and_commit(port, "carol", "carol-secret", "team-secret")


def test_a_principal_without_acls_can_neither_read_nor_change_a_group(secure: SecureServer) -> None:
    c, _, resp = scram_login(secure.sasl_plain, "mallory-secret", user="mallory")
    assert resp.error_code == 0
    fetched = c.request(9, 7, OffsetFetchRequest(group_id="team-a", topics=None))
    assert fetched.error_code == GROUP_DENIED and not fetched.topics
    described = c.request(
        15, 5, DescribeGroupsRequest(groups=("team-a",), include_authorized_operations=True)
    )
    assert described.groups[0].error_code == GROUP_DENIED and not described.groups[0].members
    assert c.request(16, 4, ListGroupsRequest()).groups == ()
    deleted = c.request(42, 2, DeleteGroupsRequest(groups_names=("team-a",)))
    assert deleted.results[0].error_code == GROUP_DENIED
    commit = OffsetCommitRequest(
        group_id="team-a",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=(OffsetCommitRequestTopic(name="secure", partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=99),)),),
    )  # fmt: skip
    committed = c.request(8, 8, commit)
    assert committed.topics[0].partitions[0].error_code == GROUP_DENIED
    meta = c.request(3, 12, MetadataRequest(topics=(MetadataRequestTopic(name="secure"),)))
    assert meta.topics[0].error_code == TOPIC_DENIED and not meta.topics[0].partitions
    assert c.request(3, 12, MetadataRequest(topics=None)).topics == ()
    # nothing changed: carol's group and offset are where they were
    admin, _, ok = scram_login(secure.sasl_plain, "admin-secret", user="admin")
    assert ok.error_code == 0
    group = admin.request(15, 5, DescribeGroupsRequest(groups=("team-a",))).groups[0]
    assert group.error_code == 0 and group.group_state == "Empty"
    offsets = admin.request(9, 7, OffsetFetchRequest(group_id="team-a", topics=None))
    assert [(t.name, p.committed_offset) for t in offsets.topics for p in t.partitions] == [("secure", 5)]


@pytest.mark.parametrize("version", [0, 1])
def test_offset_fetch_v0_v1_of_a_denied_group_fails_per_partition(secure: SecureServer, version: int) -> None:
    """v0-v1 have no top-level error: as Kafka's `OffsetFetchResponse.groupError`, each partition asked for
    carries GROUP_AUTHORIZATION_FAILED (an empty answer would read as "nothing committed")."""
    c, _, resp = scram_login(secure.sasl_plain, "mallory-secret", user="mallory")
    assert resp.error_code == 0
    asked = (OffsetFetchRequestTopic(name="secure", partition_indexes=(0, 1)),)
    fetched = c.request(9, version, OffsetFetchRequest(group_id="team-a", topics=asked))
    assert [(t.name, p.partition_index, p.committed_offset, p.metadata, p.error_code) for t in fetched.topics for p in t.partitions] == [
        ("secure", 0, -1, "", GROUP_DENIED),
        ("secure", 1, -1, "", GROUP_DENIED),
    ]  # fmt: skip


def test_kafka_python_on_offset_fetch_v1_sees_the_group_denied(secure: SecureServer) -> None:
    """A group ACL withdrawn while kafka-python holds its coordinator: its next OffsetFetch v1 must fail with
    GroupAuthorizationFailedError, not read as "no committed offset"."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import GroupAuthorizationFailedError

    admin = AdminClient(sasl(secure.sasl_plain, "admin", "admin-secret"))
    grants = [
        AclBinding(kind, name, ResourcePatternType.LITERAL, "User:mallory", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        for kind, name in ((ResourceType.GROUP, "team-k"), (ResourceType.TOPIC, "secure"))
    ]  # fmt: skip
    for f in admin.create_acls(grants).values():
        f.result(15)
    consumer = KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{secure.sasl_plain}",
        group_id="team-k",
        enable_auto_commit=False,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="mallory",
        sasl_plain_password="mallory-secret",
        api_version=(0, 10, 1),  # OffsetFetch v1 (and SaslHandshake v0 with raw tokens)
    )

    def withdraw(kind: ResourceType, name: str) -> None:
        flt = AclBindingFilter(
            kind,
            name,
            ResourcePatternType.LITERAL,
            "User:mallory",
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        for f in admin.delete_acls([flt]).values():
            assert len(f.result(15)) == 1

    try:
        assert consumer.committed(TopicPartition("secure", 0)) is None  # allowed: nothing committed yet
        withdraw(ResourceType.GROUP, "team-k")
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.committed(TopicPartition("secure", 0))
    finally:
        consumer.close()
        withdraw(ResourceType.TOPIC, "secure")


def test_anonymous_and_unprivileged_principals_cannot_manage_acls(secure: SecureServer) -> None:
    from groupcoord.protocol.messages.describe_acls import DescribeAclsRequest
    from tests.integration.helpers import RawClient

    anonymous = RawClient("127.0.0.1", secure.plain)
    flt = DescribeAclsRequest(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1,
    )  # fmt: skip
    assert anonymous.request(29, 3, flt).error_code == CLUSTER_DENIED
    assert (
        anonymous.request(9, 7, OffsetFetchRequest(group_id="team-a", topics=None)).error_code == GROUP_DENIED
    )


def test_scram_users_are_managed_with_the_admin_apis(secure: SecureServer) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(sasl(secure.sasl_plain, "admin", "admin-secret"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    for f in admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("dave", info, b"dave-pw")]
    ).values():
        f.result(15)
    described = admin.describe_user_scram_credentials(["dave"])["dave"].result(15)
    (cred,) = described.scram_credential_infos
    assert (cred.mechanism, cred.iterations) == (ScramMechanism.SCRAM_SHA_256, 8192)
    assert scram_login(secure.sasl_plain, "dave-pw", user="dave")[2].error_code == 0
    # mallory may not: CLUSTER_AUTHORIZATION_FAILED
    sneaky = AdminClient(sasl(secure.sasl_plain, "mallory", "mallory-secret"))
    upsert = UserScramCredentialUpsertion("mallory", info, b"other")
    with pytest.raises(KafkaException, match=r"CLUSTER_AUTHORIZATION_FAILED|[Aa]uthoriz"):
        for f in sneaky.alter_user_scram_credentials([upsert]).values():
            f.result(15)
    assert scram_login(secure.sasl_plain, "mallory-secret", user="mallory")[2].error_code == 0
    deletion = UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_256)
    for f in admin.alter_user_scram_credentials([deletion]).values():
        f.result(15)
    # dave no longer exists: his old password fails (at the proof, exactly as a wrong password does)
    assert scram_login(secure.sasl_plain, "dave-pw", user="dave")[2].error_code == SASL_AUTHENTICATION_FAILED


def test_acls_and_scram_users_survive_a_restart(secure: SecureServer) -> None:
    before = describe_acl_count(secure.sasl_plain)
    assert before == 3
    # restart without --add-scram: the users come from the stored credentials alone
    at = secure.srv.args.index("--add-scram")
    secure.srv.args = secure.srv.args[:at] + secure.srv.args[at + 2 :]
    secure.srv.restart()
    assert describe_acl_count(secure.sasl_plain) == before
    assert consume_and_commit(secure.sasl_plain, "carol", "carol-secret", "team-b") == 5
