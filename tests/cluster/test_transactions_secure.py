"""Issue 27 item 3: cluster transactions whose markers are forwarded over secured inter-broker listeners.

Three nodes, every partition of the topic led by a different node, so the transaction coordinator forwards
WriteTxnMarkers to the two other leaders (server/security/inter_broker.py): (a) over SASL_PLAINTEXT listeners
logging in with SCRAM-SHA-256 as the brokers' own user, (b) over SSL listeners with client certificates
required, the node presenting its certificate. The authorizer is on in both; the forwarding principal is a
super user (Kafka's usual broker setup), the producing and reading client is not. (c) clients on a PLAINTEXT
listener and the nodes on a SASL_PLAINTEXT one: each is told the other nodes' addresses on its own listener.
confluent-kafka commits and aborts transactions; read_committed readers bootstrapped at every node see the
committed records once and the aborted ones never (a read_uncommitted reader proves the aborted ones were
written). (d) nodes whose principal lacks CLUSTER_ACTION: their forwarded markers are refused."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, wait_balanced, wait_partitions_spread
from tests.cluster.test_transactions import read_all
from tests.conftest import ServerProcess, free_port
from tests.integration.certs import make_certs, make_node_cert

pytestmark = [pytest.mark.integration]

TXN_ID = "tx-secure"
AUTHORIZER = ("--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")


def start_cluster(
    tmp_path: Path,
    url: str,
    protocol: str,
    extra: tuple[str, ...],
    *,
    internal: str | None = None,
    allow_everyone: bool = True,
) -> dict[int, ServerProcess]:
    """Three nodes, each with one `protocol` listener, the inter-broker one (named explicitly); with
    `internal`, clients use the `protocol` listener CLIENT and the nodes talk over a second, INTERNAL one."""
    nodes: dict[int, ServerProcess] = {}
    try:
        for n in (1, 2, 3):
            port = free_port()
            if internal is None:
                listeners: tuple[str, ...] = (
                    "--listeners", f"{protocol}://127.0.0.1:{port}", "--inter-broker-listener-name", protocol,
                )  # fmt: skip
            else:
                listeners = (
                    "--listeners", f"CLIENT://127.0.0.1:{port},INTERNAL://127.0.0.1:{free_port()}",
                    "--listener-security-protocol-map", f"CLIENT:{protocol},INTERNAL:{internal}",
                    "--inter-broker-listener-name", "INTERNAL",
                )  # fmt: skip
            args = (
                "--cluster", url, "--node-id", str(n), "--topic", "tx:3", *listeners,
                *AUTHORIZER, "--allow-everyone-if-no-acl-found", str(allow_everyone).lower(),
                *extra,
            )  # fmt: skip
            nodes[n] = ServerProcess(tmp_path / f"node{n}", args, port=port).start()
    except BaseException:
        for srv in nodes.values():
            srv.kill()
        raise
    return nodes


def run_transactions(conf: dict[str, Any], topic: str, partitions: int) -> None:
    p = Producer({**conf, "transactional.id": TXN_ID, "acks": "all"})
    p.init_transactions(90)
    for n, outcome in enumerate(("commit", "abort", "commit")):
        p.begin_transaction()
        for i in range(30):
            p.produce(topic, value=b"%s-%d-%d" % (outcome.encode(), n, i), partition=i % partitions)
        if outcome == "commit":
            p.commit_transaction(90)
        else:
            p.flush(90)  # the aborted records are in the log before the ABORT markers
            p.abort_transaction(90)
    assert p.flush(30) == 0


async def check_transactions(nodes: dict[int, ServerProcess], url: str, client: dict[str, Any]) -> None:
    await wait_balanced(url, list(nodes), timeout=90)
    leaders = await wait_partitions_spread(url, "tx", 3, list(nodes), timeout=60)
    assert {owner for owner, _ in leaders.values()} == set(nodes)  # the coordinator forwards two markers
    coordinator = await shard_owner(url, shard_of(TXN_ID, 50))
    bootstrap = next(n for n in nodes if n != coordinator)
    await asyncio.to_thread(
        run_transactions, {**client, "bootstrap.servers": nodes[bootstrap].bootstrap}, "tx", 3
    )
    committed = sorted(b"commit-%d-%d" % (n, i) for n in (0, 2) for i in range(30))
    for node in nodes.values():
        conf = {**client, "bootstrap.servers": node.bootstrap}
        assert sorted(await asyncio.to_thread(read_all, conf, "tx", 3, "read_committed")) == committed
    conf = {**client, "bootstrap.servers": nodes[coordinator].bootstrap}
    everything = await asyncio.to_thread(read_all, conf, "tx", 3, "read_uncommitted")
    assert sorted(everything) == sorted([*committed, *(b"abort-1-%d" % i for i in range(30))])


async def test_markers_forwarded_over_sasl_scram(tmp_path: Path, pg_url: str) -> None:
    users = (
        "SCRAM-SHA-256=[name=admin,password=admin-secret];SCRAM-SHA-256=[name=alice,password=alice-secret]"
    )
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
    nodes = start_cluster(
        tmp_path,
        pg_url,
        "SASL_PLAINTEXT",
        (
            "--sasl-enabled-mechanisms", "SCRAM-SHA-256",
            "--sasl-mechanism-inter-broker-protocol", "SCRAM-SHA-256",
            "--add-scram", users, "--sasl-jaas-config", jaas,
            "--super-users", "User:admin",
        ),
    )  # fmt: skip
    try:
        client = {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
        await check_transactions(nodes, pg_url, client)
    finally:
        for srv in nodes.values():
            srv.kill()


async def test_markers_forwarded_over_ssl(tmp_path: Path, pg_url: str) -> None:
    certs = make_certs(tmp_path / "certs")
    keystore, principal = make_node_cert(tmp_path / "certs", "broker")
    nodes = start_cluster(
        tmp_path,
        pg_url,
        "SSL",
        (
            "--ssl-keystore-location", str(keystore),
            "--ssl-truststore-location", str(certs.ca),
            "--ssl-client-auth", "required",
            "--super-users", principal,
        ),
    )  # fmt: skip
    try:
        client = {
            "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca),
            "ssl.certificate.location": str(certs.client_cert),
            "ssl.key.location": str(certs.client_key),
        }
        await check_transactions(nodes, pg_url, client)
    finally:
        for srv in nodes.values():
            srv.kill()


async def test_clients_and_nodes_on_listeners_of_their_own(tmp_path: Path, pg_url: str) -> None:
    """(c) Kafka's usual split: clients on a PLAINTEXT listener CLIENT (listed first), the nodes on a
    SASL_PLAINTEXT SCRAM listener INTERNAL. Each node registers INTERNAL's address for the others and every
    listener's for clients: Metadata and FindCoordinator name the CLIENT addresses of all nodes (a plaintext
    client could not speak to INTERNAL), and the markers go over INTERNAL."""
    nodes = start_cluster(
        tmp_path,
        pg_url,
        "PLAINTEXT",
        (
            "--sasl-enabled-mechanisms", "SCRAM-SHA-256",
            "--sasl-mechanism-inter-broker-protocol", "SCRAM-SHA-256",
            "--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]",
            "--sasl-jaas-config",
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";',
            "--super-users", "User:admin",
        ),
        internal="SASL_PLAINTEXT",
    )  # fmt: skip
    try:
        client_ports = {srv.port for srv in nodes.values()}
        await check_transactions(nodes, pg_url, {})
        conn = await asyncpg.connect(pg_url)
        try:
            registered = {r[0]: r[1] for r in await conn.fetch("SELECT node_id, port FROM nodes")}
        finally:
            await conn.close()
        assert set(registered) == set(nodes) and not set(registered.values()) & client_ports  # INTERNAL's
        for srv in nodes.values():
            brokers = AdminClient({"bootstrap.servers": srv.bootstrap}).list_topics(timeout=30).brokers
            assert {b.port for b in brokers.values()} == client_ports
    finally:
        for srv in nodes.values():
            srv.kill()


def commit_one(conf: dict[str, Any], topic: str, partitions: int) -> None:
    """One committed transaction over every partition; its outcome is not this test's subject."""
    p = Producer({**conf, "transactional.id": TXN_ID, "acks": "all"})
    try:
        p.init_transactions(60)
        p.begin_transaction()
        for i in range(partitions):
            p.produce(topic, value=b"v%d" % i, partition=i)
        p.commit_transaction(60)
    except KafkaException:
        pass
    finally:
        p.flush(10)


async def test_forwarding_principal_without_cluster_action_is_refused(tmp_path: Path, pg_url: str) -> None:
    """(d) As in Kafka, the authorizer checks a forwarded WriteTxnMarkers for CLUSTER_ACTION on the Cluster:
    nodes logging in as `broker`, neither a super user nor granted it, get CLUSTER_AUTHORIZATION_FAILED and
    the coordinator says what to fix (the client `app` is a super user, so its own requests pass)."""
    users = "SCRAM-SHA-256=[name=broker,password=b-secret];SCRAM-SHA-256=[name=app,password=a-secret]"
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-secret";'
    nodes = start_cluster(
        tmp_path,
        pg_url,
        "SASL_PLAINTEXT",
        (
            "--sasl-enabled-mechanisms", "SCRAM-SHA-256",
            "--sasl-mechanism-inter-broker-protocol", "SCRAM-SHA-256",
            "--add-scram", users, "--sasl-jaas-config", jaas,
            "--super-users", "User:app",
        ),
        allow_everyone=False,
    )  # fmt: skip
    try:
        await wait_balanced(pg_url, list(nodes), timeout=90)
        leaders = await wait_partitions_spread(pg_url, "tx", 3, list(nodes), timeout=60)
        assert {owner for owner, _ in leaders.values()} == set(nodes)
        coordinator = await shard_owner(pg_url, shard_of(TXN_ID, 50))
        client = {
            "bootstrap.servers": nodes[coordinator].bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "app",
            "sasl.password": "a-secret",
        }
        await asyncio.to_thread(commit_one, client, "tx", 3)
        deadline = time.monotonic() + 60
        while "needs CLUSTER_ACTION" not in nodes[coordinator].log_path.read_text(errors="replace"):
            assert time.monotonic() < deadline, "no refused marker logged"
            await asyncio.sleep(0.2)
    finally:
        for srv in nodes.values():
            srv.kill()
