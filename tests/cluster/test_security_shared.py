"""Issue 27: a three-node cluster is one Kafka cluster to every client, its ACLs and SCRAM users included.

Kafka keeps ACLs and SCRAM credentials in the metadata log, so what an admin changes through one broker is
enforced by every broker. Here they live in PostgreSQL (server/security/cluster_store.py): (1) an ACL created
through node 1 lets a SASL user in at node 2, DescribeAcls answers the same at every node, DeleteAcls at node
3 removes it everywhere; (2) a SCRAM user created through node 1 (AlterUserScramCredentials) logs in at node
3, and once deleted there no longer; (3) a restarted node keeps both. Changes reach the other nodes within
about a second (NOTIFY, or each node's once-a-second check): the test polls with generous deadlines.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from groupcoord.protocol.messages import alter_user_scram_credentials as al
from groupcoord.protocol.messages import create_acls as ca
from groupcoord.protocol.messages import delete_acls as da
from groupcoord.protocol.messages import describe_acls as ds
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from groupcoord.server.security.scram import new_credential
from tests.cluster.test_transactions_secure import start_cluster
from tests.conftest import ServerProcess
from tests.integration.helpers import RawClient
from tests.integration.security_fixture import scram_login

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC_DENIED, SASL_AUTHENTICATION_FAILED = 29, 58
ADMIN = ("admin", "admin-secret")
CAROL = ("carol", "carol-secret")
SALT, ITERATIONS = b"salt-of-carol", 8192
TOPIC, LITERAL, READ, ALLOW, ANY = 2, 3, 3, 3, 1
#: carol may READ topic tx (as DescribeAcls lists it: resource, then principal, host, operation, permission)
GRANT = (TOPIC, "tx", LITERAL, "User:carol", "*", READ, ALLOW)


def admin_at(srv: ServerProcess) -> RawClient:
    """A connection logged in as the super user at exactly this node (requests go nowhere else)."""
    c, _, resp = scram_login(srv.port, ADMIN[1], user=ADMIN[0])
    assert resp.error_code == 0
    return c


def ask(srv: ServerProcess, api_key: int, version: int, body: Any) -> Any:
    c = admin_at(srv)
    try:
        return c.request(api_key, version, body)
    finally:
        c.close()


def login_code(srv: ServerProcess, user: str, password: str) -> int:
    c, _, resp = scram_login(srv.port, password, user=user)
    c.close()
    return resp.error_code


def topic_code(srv: ServerProcess) -> int:
    """carol's Metadata error for topic tx at `srv` (READ implies DESCRIBE: 0 once granted)."""
    c, _, resp = scram_login(srv.port, CAROL[1], user=CAROL[0])
    try:
        assert resp.error_code == 0
        return (
            c.request(3, 12, MetadataRequest(topics=(MetadataRequestTopic(name="tx"),))).topics[0].error_code
        )
    finally:
        c.close()


def described(srv: ServerProcess) -> set[tuple[Any, ...]]:
    """Every binding DescribeAcls (v3) names at `srv`."""
    resp = ask(srv, 29, 3, ds.DescribeAclsRequest(ANY, None, ANY, None, None, ANY, ANY))
    assert resp.error_code == 0
    return {
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in resp.resources
        for a in r.acls
    }


def alter_scram(srv: ServerProcess, body: al.AlterUserScramCredentialsRequest) -> None:
    (result,) = ask(srv, 51, 0, body).results
    assert (result.user, result.error_code) == (CAROL[0], 0), result


def eventually(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout}s: {what}"
        time.sleep(0.2)


async def test_acls_and_scram_users_are_the_clusters(tmp_path: Path, pg_url: str) -> None:
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
    nodes = start_cluster(
        tmp_path,
        pg_url,
        "SASL_PLAINTEXT",
        (
            "--sasl-enabled-mechanisms", "SCRAM-SHA-256",
            "--sasl-mechanism-inter-broker-protocol", "SCRAM-SHA-256",
            "--add-scram", f"SCRAM-SHA-256=[name={ADMIN[0]},password={ADMIN[1]}]",
            "--sasl-jaas-config", jaas, "--super-users", "User:admin",
        ),
        allow_everyone=False,
    )  # fmt: skip
    try:
        # (2) a SCRAM user made through node 1 logs in at node 3 (and node 2)
        assert login_code(nodes[3], *CAROL) == SASL_AUTHENTICATION_FAILED
        salted = hashlib.pbkdf2_hmac("sha256", CAROL[1].encode(), SALT, ITERATIONS)
        upsert = al.ScramCredentialUpsertion(CAROL[0], 1, ITERATIONS, SALT, salted)  # 1: SCRAM-SHA-256
        alter_scram(nodes[1], al.AlterUserScramCredentialsRequest(deletions=(), upsertions=(upsert,)))
        for n in (3, 2):
            eventually(f"carol logs in at node {n}", lambda n=n: login_code(nodes[n], *CAROL) == 0)
        # only the salted credential is stored, as Kafka's ScramCredential: never the password
        conn = await asyncpg.connect(pg_url)
        try:
            row = await conn.fetchrow("SELECT * FROM scram_credentials WHERE user_name = 'carol'")
        finally:
            await conn.close()
        assert row["salt"] == SALT and row["iterations"] == ITERATIONS and row["mechanism"] == "SCRAM-SHA-256"
        stored = (bytes(row["stored_key"]), bytes(row["server_key"]))
        assert all(CAROL[1].encode() not in v and salted != v for v in stored)

        # (1) carol is denied tx at node 2 until an ACL created at node 1 grants it
        assert topic_code(nodes[2]) == TOPIC_DENIED
        created = ask(nodes[1], 30, 3, ca.CreateAclsRequest(creations=(ca.AclCreation(*GRANT),)))
        assert [r.error_code for r in created.results] == [0]
        eventually("node 2 lets carol describe tx", lambda: topic_code(nodes[2]) == 0)
        for n in (1, 2, 3):
            eventually(
                f"DescribeAcls at node {n} names the binding", lambda n=n: described(nodes[n]) == {GRANT}
            )

        # (3) a restarted node keeps the ACL and the user
        nodes[2].restart()
        assert login_code(nodes[2], *CAROL) == 0  # read before the node listens
        eventually("restarted node 2 lets carol describe tx", lambda: topic_code(nodes[2]) == 0)
        assert described(nodes[2]) == {GRANT}

        # DeleteAcls at node 3 removes it everywhere
        flt = da.DeleteAclsFilter(TOPIC, "tx", LITERAL, "User:carol", None, ANY, ANY)
        (result,) = ask(nodes[3], 31, 3, da.DeleteAclsRequest(filters=(flt,))).filter_results
        assert result.error_code == 0 and len(result.matching_acls) == 1
        for n in (1, 2, 3):
            eventually(f"node {n} denies carol again", lambda n=n: topic_code(nodes[n]) == TOPIC_DENIED)
            assert described(nodes[n]) == set()

        # a user deleted through node 1 can no longer log in at node 3
        deletion = al.ScramCredentialDeletion(CAROL[0], 1)
        alter_scram(nodes[1], al.AlterUserScramCredentialsRequest(deletions=(deletion,), upsertions=()))
        eventually("node 3 refuses carol", lambda: login_code(nodes[3], *CAROL) == SASL_AUTHENTICATION_FAILED)
        assert login_code(nodes[1], *ADMIN) == 0  # the brokers' own user is untouched
    finally:
        for srv in nodes.values():
            srv.kill()


async def test_a_nodes_own_security_json_is_merged_into_the_clusters(tmp_path: Path, pg_url: str) -> None:
    """Upgrade: earlier versions kept ACLs and SCRAM users per node in cluster mode too. A node's
    security.json is merged into the cluster's at its start (then renamed): its user logs in and its binding
    is enforced at the other nodes."""
    data = tmp_path / "node1"
    data.mkdir()
    dave = new_credential("SCRAM-SHA-256", "dave-secret", 4096)
    (data / "security.json").write_text(
        json.dumps({"acls": [[*GRANT[:3], "User:dave", "*", READ, ALLOW]], "scram": {"dave": {
            "SCRAM-SHA-256": dave.to_json()}}})
    )  # fmt: skip
    (data / "security.json").chmod(0o600)
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
    nodes = start_cluster(
        tmp_path,
        pg_url,
        "SASL_PLAINTEXT",
        (
            "--sasl-enabled-mechanisms", "SCRAM-SHA-256",
            "--sasl-mechanism-inter-broker-protocol", "SCRAM-SHA-256",
            "--add-scram", f"SCRAM-SHA-256=[name={ADMIN[0]},password={ADMIN[1]}]",
            "--sasl-jaas-config", jaas, "--super-users", "User:admin",
        ),
        allow_everyone=False,
    )  # fmt: skip
    try:
        eventually("dave logs in at node 3", lambda: login_code(nodes[3], "dave", "dave-secret") == 0)
        want = {(*GRANT[:3], "User:dave", "*", READ, ALLOW)}
        for n in (2, 3):
            eventually(
                f"DescribeAcls at node {n} names dave's binding", lambda n=n: described(nodes[n]) == want
            )
        assert not (data / "security.json").exists() and (data / "security.json.merged").exists()
        # merged once: a restart does not bring back what was deleted meanwhile
        flt = da.DeleteAclsFilter(ANY, None, ANY, None, None, ANY, ANY)
        ask(nodes[2], 31, 3, da.DeleteAclsRequest(filters=(flt,)))
        nodes[1].restart()
        assert described(nodes[1]) == set()
    finally:
        for srv in nodes.values():
            srv.kill()
