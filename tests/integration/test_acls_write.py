"""ACLs on the write path and topic administration (issue 18): Produce, InitProducerId, the transaction APIs,
CreateTopics/DeleteTopics/DescribeConfigs, answered per resource with Kafka's codes as KafkaApis does.

Clients: aiokafka (plain, idempotent and transactional producers), confluent-kafka (producer, AdminClient),
raw requests for what no client sends on purpose (AddPartitionsToTxn with a denied topic)."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from groupcoord.protocol.messages.init_producer_id import InitProducerIdRequest
from tests.integration.security_fixture import SecureServer, scram_login, start_secure_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
USERS = (
    ("admin", "admin-secret"),
    ("writer", "writer-secret"),  # WRITE orders; CREATE topics new-*
    ("reader", "reader-secret"),  # READ orders (so it sees the topic) but no WRITE
    ("txn", "txn-secret"),  # WRITE TransactionalId eos-*, WRITE/READ orders, READ group eos-group
)
TOPIC_DENIED, CLUSTER_DENIED, TXN_ID_DENIED, NOT_ATTEMPTED = 29, 31, 53, 55


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(
        tmp_path_factory.mktemp("acls-write"),
        "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users", "User:admin",
        "--topic", "orders:1",
        "--topic", "audit:1",
        users=USERS,
    )  # fmt: skip
    create_acls(s.sasl_plain)
    yield s
    s.srv.kill()


def sasl(port: int, user: str) -> dict[str, object]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


def aiokafka_auth(user: str) -> dict[str, object]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": user,
        "sasl_plain_password": f"{user}-secret",
    }


def create_acls(port: int) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AdminClient, ResourcePatternType, ResourceType
    from confluent_kafka.admin import AclPermissionType as P

    lit, pre = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    op, rt = AclOperation, ResourceType
    bindings = [
        AclBinding(rt.TOPIC, "orders", lit, "User:writer", "*", op.WRITE, P.ALLOW),
        AclBinding(rt.TOPIC, "new-", pre, "User:writer", "*", op.CREATE, P.ALLOW),
        AclBinding(rt.TOPIC, "new-", pre, "User:writer", "*", op.DESCRIBE, P.ALLOW),
        AclBinding(rt.TOPIC, "ghost-", pre, "User:writer", "*", op.DESCRIBE, P.ALLOW),
        AclBinding(rt.TOPIC, "orders", lit, "User:reader", "*", op.READ, P.ALLOW),
        AclBinding(rt.TOPIC, "orders", lit, "User:txn", "*", op.WRITE, P.ALLOW),
        AclBinding(rt.TOPIC, "orders", lit, "User:txn", "*", op.READ, P.ALLOW),
        AclBinding(rt.TRANSACTIONAL_ID, "eos-", pre, "User:txn", "*", op.WRITE, P.ALLOW),
        AclBinding(rt.GROUP, "eos-group", lit, "User:txn", "*", op.READ, P.ALLOW),
    ]
    admin = AdminClient(sasl(port, "admin"))  # kept alive until the futures resolve
    for f in admin.create_acls(bindings).values():
        f.result(15)


def end_offset(port: int, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**sasl(port, "admin"), "group.id": "watermarks"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=60)[1])
    finally:
        c.close()


def aiokafka_produce(port: int, user: str, topic: str, **kw: object) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", **aiokafka_auth(user), **kw)
        await p.start()
        try:
            await p.send_and_wait(topic, b"v", key=b"k")
        finally:
            await p.stop()

    asyncio.run(run())


def test_a_principal_with_write_on_the_topic_produces_with_aiokafka_and_confluent_kafka(
    secure: SecureServer,
) -> None:
    from confluent_kafka import Producer

    port = secure.sasl_plain
    before = end_offset(port, "orders")
    aiokafka_produce(port, "writer", "orders")
    aiokafka_produce(port, "writer", "orders", enable_idempotence=True)  # InitProducerId: WRITE on a topic
    p = Producer({**sasl(port, "writer"), "enable.idempotence": True})
    failures: list[object] = []
    p.produce("orders", b"v", on_delivery=lambda err, _m: failures.append(err) if err else None)
    assert p.flush(20) == 0 and failures == []
    assert end_offset(port, "orders") == before + 3


def test_without_write_on_the_topic_produce_is_refused_and_nothing_is_appended(secure: SecureServer) -> None:
    from aiokafka.errors import TopicAuthorizationFailedError

    port = secure.sasl_plain
    before = end_offset(port, "orders")
    with pytest.raises(TopicAuthorizationFailedError):
        aiokafka_produce(port, "reader", "orders")
    with pytest.raises(TopicAuthorizationFailedError):  # WRITE on orders is not WRITE on audit
        aiokafka_produce(port, "writer", "audit")
    assert end_offset(port, "orders") == before
    assert end_offset(port, "audit") == 0


def test_idempotent_init_producer_id_needs_write_on_some_topic(secure: SecureServer) -> None:
    idempotent = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    reader, _, ok = scram_login(secure.sasl_plain, "reader-secret", user="reader")
    assert ok.error_code == 0
    refused = reader.request(22, 4, idempotent)
    assert (refused.error_code, refused.producer_id) == (CLUSTER_DENIED, -1)
    writer, _, ok = scram_login(secure.sasl_plain, "writer-secret", user="writer")
    granted = writer.request(22, 4, idempotent)
    assert granted.error_code == 0 and granted.producer_id >= 0
    transactional = InitProducerIdRequest(transactional_id="eos-1", transaction_timeout_ms=60000)
    assert writer.request(22, 4, transactional).error_code == TXN_ID_DENIED


def test_a_transactional_producer_with_its_acls_runs_the_exactly_once_loop(secure: SecureServer) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    port = secure.sasl_plain
    before = end_offset(port, "orders")

    async def run() -> tuple[int, list[bytes]]:
        p = AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}", transactional_id="eos-loop", **aiokafka_auth("txn")
        )
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("orders", b"exactly-once")
                await p.send_offsets_to_transaction({TopicPartition("orders", 0): before}, "eos-group")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(
            bootstrap_servers=f"127.0.0.1:{port}", isolation_level="read_committed", **aiokafka_auth("admin")
        )
        await c.start()
        try:
            tp = TopicPartition("orders", 0)
            c.assign([tp])
            c.seek(tp, before)
            got = await c.getmany(tp, timeout_ms=10000)
            committed = await committed_offset(port, "eos-group", tp)
            return committed, [m.value for m in got.get(tp, [])]
        finally:
            await c.stop()

    committed, values = asyncio.run(run())
    assert values == [b"exactly-once"]
    assert committed == before


async def committed_offset(port: int, group: str, tp: object) -> int:
    from aiokafka import AIOKafkaConsumer

    c = AIOKafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id=group, **aiokafka_auth("admin"))
    await c.start()
    try:
        return int(await c.committed(tp))  # type: ignore[arg-type]
    finally:
        await c.stop()


def test_a_transactional_producer_without_the_transactional_id_acl_is_refused(secure: SecureServer) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TransactionalIdAuthorizationFailed

    async def run() -> None:
        p = AIOKafkaProducer(
            bootstrap_servers=f"127.0.0.1:{secure.sasl_plain}",
            transactional_id="other-id",
            **aiokafka_auth("txn"),
        )
        try:
            await p.start()
        finally:
            await p.stop()

    with pytest.raises(TransactionalIdAuthorizationFailed):
        asyncio.run(run())


def test_add_partitions_to_txn_refuses_a_denied_topic_and_does_not_attempt_the_others(
    secure: SecureServer,
) -> None:
    c, _, ok = scram_login(secure.sasl_plain, "txn-secret", user="txn")
    assert ok.error_code == 0
    init = c.request(22, 4, InitProducerIdRequest(transactional_id="eos-raw", transaction_timeout_ms=60000))
    assert init.error_code == 0
    resp = c.request(
        24,
        3,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="eos-raw",
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=(
                AddPartitionsToTxnTopic(name="orders", partitions=(0,)),
                AddPartitionsToTxnTopic(name="audit", partitions=(0,)),
            ),
        ),
    )
    codes = {
        (t.name, p.partition_index): p.partition_error_code
        for t in resp.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }
    assert codes == {("orders", 0): NOT_ATTEMPTED, ("audit", 0): TOPIC_DENIED}


def test_topic_admin_is_answered_per_topic_with_kafkas_codes(secure: SecureServer) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

    admin = AdminClient(sasl(secure.sasl_plain, "writer"))
    created = admin.create_topics([NewTopic("new-one", 1, 1), NewTopic("forbidden", 1, 1)])
    created["new-one"].result(15)
    with pytest.raises(KafkaException) as denied:
        created["forbidden"].result(15)
    assert denied.value.args[0].code() == TOPIC_DENIED

    with pytest.raises(KafkaException) as denied:
        admin.delete_topics(["orders"])["orders"].result(15)
    assert denied.value.args[0].code() == TOPIC_DENIED

    topic_cfg, broker_cfg = (
        ConfigResource(ResourceType.TOPIC, "orders"),
        ConfigResource(ResourceType.BROKER, "0"),
    )
    for res, code in ((topic_cfg, TOPIC_DENIED), (broker_cfg, CLUSTER_DENIED)):
        with pytest.raises(KafkaException) as denied:
            admin.describe_configs([res])[res].result(15)
        assert denied.value.args[0].code() == code
    super_admin = AdminClient(sasl(secure.sasl_plain, "admin"))
    assert "orders" in super_admin.list_topics(timeout=60).topics
    assert super_admin.describe_configs([topic_cfg])[topic_cfg].result(15)


def test_raw_admin_and_transaction_requests_are_answered_per_resource(secure: SecureServer) -> None:
    from groupcoord.protocol.messages import create_partitions as cp
    from groupcoord.protocol.messages import delete_records as dr
    from groupcoord.protocol.messages import incremental_alter_configs as iac
    from groupcoord.protocol.messages import offset_for_leader_epoch as ol
    from groupcoord.protocol.messages import txn_offset_commit as tc
    from groupcoord.protocol.messages.describe_transactions import DescribeTransactionsRequest
    from groupcoord.protocol.messages.end_txn import EndTxnRequest
    from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
    from groupcoord.protocol.messages.list_transactions import ListTransactionsRequest
    from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    writer, _, ok = scram_login(secure.sasl_plain, "writer-secret", user="writer")
    txn, _, ok2 = scram_login(secure.sasl_plain, "txn-secret", user="txn")
    assert ok.error_code == 0 and ok2.error_code == 0

    # Metadata auto-creation: CREATE on the topic is enough; DESCRIBE without CREATE gets 29 and no topic
    wanted = (MetadataRequestTopic(name="new-auto"), MetadataRequestTopic(name="ghost-auto"))
    meta = writer.request(3, 12, MetadataRequest(topics=wanted, allow_auto_topic_creation=True))
    codes = {t.name: t.error_code for t in meta.topics}
    assert codes["ghost-auto"] == TOPIC_DENIED and codes["new-auto"] != TOPIC_DENIED
    admin = scram_login(secure.sasl_plain, "admin-secret", user="admin")[0]
    listed = {t.name for t in admin.request(3, 12, MetadataRequest(topics=None)).topics}
    assert "new-auto" in listed and "ghost-auto" not in listed

    deleted = writer.request(
        21, 2, dr.DeleteRecordsRequest(topics=(dr.DeleteRecordsTopic(name="orders", partitions=(dr.DeleteRecordsPartition(partition_index=0, offset=1),)),), timeout_ms=5000)
    )  # fmt: skip
    assert deleted.topics[0].partitions[0].error_code == TOPIC_DENIED
    grown = writer.request(
        37, 3, cp.CreatePartitionsRequest(topics=(cp.CreatePartitionsTopic(name="orders", count=3, assignments=None),), timeout_ms=5000, validate_only=False)
    )  # fmt: skip
    assert grown.results[0].error_code == TOPIC_DENIED
    epochs = txn.request(
        23, 4, ol.OffsetForLeaderEpochRequest(topics=tuple(ol.OffsetForLeaderTopic(topic=n, partitions=(ol.OffsetForLeaderPartition(partition=0, leader_epoch=0),)) for n in ("orders", "audit")))
    )  # fmt: skip
    assert {t.topic: t.partitions[0].error_code for t in epochs.topics} == {
        "orders": 0,
        "audit": TOPIC_DENIED,
    }
    altered = writer.request(
        44, 1, iac.IncrementalAlterConfigsRequest(resources=(iac.IncrementalAlterConfigsResource(resource_type=2, resource_name="orders", configs=(iac.IncrementalAlterableConfig(name="retention.ms", config_operation=0, value="1000"),)), iac.IncrementalAlterConfigsResource(resource_type=4, resource_name="0", configs=())), validate_only=False)
    )  # fmt: skip
    assert {r.resource_type: r.error_code for r in altered.responses} == {2: TOPIC_DENIED, 4: CLUSTER_DENIED}

    # the transaction APIs: the TransactionalId ACL decides
    init = txn.request(
        22, 4, InitProducerIdRequest(transactional_id="eos-list", transaction_timeout_ms=60000)
    )
    assert init.error_code == 0
    end = EndTxnRequest(transactional_id="eos-list", producer_id=init.producer_id, producer_epoch=init.producer_epoch, committed=False)  # fmt: skip
    assert writer.request(26, 3, end).error_code == TXN_ID_DENIED
    commit = tc.TxnOffsetCommitRequest(
        transactional_id="eos-list", group_id="eos-group", producer_id=init.producer_id, producer_epoch=init.producer_epoch,
        topics=(tc.TxnOffsetCommitRequestTopic(name="orders", partitions=(tc.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata=None),)),),
    )  # fmt: skip
    assert writer.request(28, 3, commit).topics[0].partitions[0].error_code == TXN_ID_DENIED
    find = FindCoordinatorRequest(key_type=1, coordinator_keys=("eos-list",))
    assert writer.request(10, 4, find).coordinators[0].error_code == TXN_ID_DENIED
    assert txn.request(10, 4, find).coordinators[0].error_code == 0
    described = writer.request(65, 0, DescribeTransactionsRequest(transactional_ids=("eos-list",)))
    assert described.transaction_states[0].error_code == TXN_ID_DENIED
    assert (
        txn.request(65, 0, DescribeTransactionsRequest(transactional_ids=("eos-list",)))
        .transaction_states[0]
        .error_code
        == 0
    )
    everything = ListTransactionsRequest(state_filters=(), producer_id_filters=())
    assert "eos-list" not in {
        t.transactional_id for t in writer.request(66, 1, everything).transaction_states
    }
    assert "eos-list" in {t.transactional_id for t in txn.request(66, 1, everything).transaction_states}


def test_a_transactional_produce_without_write_on_its_transactional_id_is_refused_whole(
    secure: SecureServer,
) -> None:
    from groupcoord.protocol.messages import produce as pr
    from tests.log.log_helpers import make_batch

    port = secure.sasl_plain
    before = end_offset(port, "orders")
    writer, _, ok = scram_login(
        port, "writer-secret", user="writer"
    )  # WRITE on orders, no TransactionalId ACL
    assert ok.error_code == 0
    batch = make_batch(1, pid=7, epoch=0, seq=0, transactional=True)
    data = (
        pr.TopicProduceData(name="orders", partition_data=(pr.PartitionProduceData(index=0, records=batch),)),
    )
    for tid in ("eos-not-mine", None):
        resp = writer.request(
            0, 9, pr.ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=data)
        )
        assert resp.responses[0].partition_responses[0].error_code == TXN_ID_DENIED
    assert end_offset(port, "orders") == before
