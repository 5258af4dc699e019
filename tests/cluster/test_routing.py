"""What clients see of a three-node cluster: every live node in Metadata, one owner per group everywhere,
NOT_COORDINATOR from the others (raw wire requests, as Kafka's clients send them)."""

from __future__ import annotations

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.messages.end_txn import EndTxnRequest
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest
from groupcoord.protocol.messages.init_producer_id import InitProducerIdRequest
from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced
from tests.integration.helpers import RawClient, wait_for_sync

pytestmark = [pytest.mark.integration]

TID = "a-transactional-id"


async def test_metadata_lists_live_nodes_and_every_node_names_the_same_coordinator(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3)
    await wait_balanced(pg_url, list(nodes))
    groups = [f"routed-{i}" for i in range(6)]
    owners = {g: await shard_owner(pg_url, shard_of(g, 50)) for g in groups}
    tid_owner = await shard_owner(pg_url, shard_of(TID, 50))
    for node_id, node in nodes.items():
        c = RawClient(node.host, node.port)
        try:
            meta = c.request(3, 9, MetadataRequest(topics=()))
            assert {(b.node_id, b.port) for b in meta.brokers} == {(n, s.port) for n, s in nodes.items()}
            expected = {g: (ErrorCode.NONE, owners[g], nodes[owners[g]].port) for g in groups}

            def answers(c: RawClient = c) -> dict:
                found = c.request(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=tuple(groups)))
                return {k.key: (k.error_code, k.node_id, k.port) for k in found.coordinators}

            # each node's owner map is refreshed every lease tick (500 ms): until then a shard that just
            # moved may be answered COORDINATOR_NOT_AVAILABLE, which clients retry
            wait_for_sync(
                lambda e=expected: answers() == e, 60, f"node {node_id} to name every group's owner"
            )
            old = c.request(10, 1, FindCoordinatorRequest(key=groups[0], key_type=0))
            assert (old.error_code, old.node_id) == (ErrorCode.NONE, owners[groups[0]])

            # a transactional id hashes to a shard like a group: its owner is the transaction coordinator
            def txn_answer(c: RawClient = c) -> tuple:
                txn = c.request(10, 1, FindCoordinatorRequest(key=TID, key_type=1))
                return (txn.error_code, txn.node_id)

            # the same owner map: COORDINATOR_NOT_AVAILABLE until this node's next lease tick has seen it
            wait_for_sync(
                lambda: txn_answer() == (ErrorCode.NONE, tid_owner),
                60,
                f"node {node_id} to name {TID}'s owner",
            )
            init = c.request(22, 4, InitProducerIdRequest(transactional_id=TID, transaction_timeout_ms=60000))
            if node_id == tid_owner:
                assert init.error_code == ErrorCode.NONE and init.producer_id >= 0
            else:
                assert init.error_code == ErrorCode.NOT_COORDINATOR
            ended = c.request(26, 3, EndTxnRequest(TID, init.producer_id, 0, committed=True))
            # the owner knows the id (Empty: nothing to end); the others are not its coordinator
            want = ErrorCode.INVALID_TXN_STATE if node_id == tid_owner else ErrorCode.NOT_COORDINATOR
            assert ended.error_code == want, node_id
            for g in groups:  # a member the coordinator does not know, or a coordinator that is not this one
                hb = c.request(12, 4, HeartbeatRequest(group_id=g, generation_id=1, member_id="m"))
                want = ErrorCode.UNKNOWN_MEMBER_ID if owners[g] == node_id else ErrorCode.NOT_COORDINATOR
                assert hb.error_code == want, (g, node_id)
                # KIP-848 heartbeats are routed the same way (an unknown group at epoch 3: GROUP_ID_NOT_FOUND)
                cg = c.request(
                    68, 1, ConsumerGroupHeartbeatRequest(group_id=g, member_id="m", member_epoch=3)
                )
                want = ErrorCode.GROUP_ID_NOT_FOUND if owners[g] == node_id else ErrorCode.NOT_COORDINATOR
                assert cg.error_code == want, (g, node_id)
        finally:
            c.close()
    # a node that stops (SIGTERM) leaves the others' Metadata by their next lease tick
    nodes[3].stop()
    c = RawClient(nodes[1].host, nodes[1].port)
    try:
        wait_for_sync(
            lambda: {b.node_id for b in c.request(3, 9, MetadataRequest(topics=())).brokers} == {1, 2},
            60,
            "node 3 to leave node 1's Metadata",
        )
    finally:
        c.close()
