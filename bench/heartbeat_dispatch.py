"""Server CPU per heartbeat inside the server, without the sockets: the classic Heartbeat (fast lane and
general path) beside the KIP-848 ConsumerGroupHeartbeat in its steady state (issue 28: "the same budget").

Not a test: it prints a table. A real `Broker` (memory storage, journal off) is started in-process; one classic
member and one KIP-848 member join a group of their own through the dispatcher, then pre-encoded heartbeat
frames of each kind are dispatched `--n` times and timed (`time.process_time`: CPU of this process). A
steady-state ConsumerGroupHeartbeat carries what librdkafka and Java send between changes: the member id
and epoch, nothing else (null subscription, assignor and owned partitions). The socket work (one read and
one write per request, ~2-7 µs here, see bench/coordinator.py's echo floor) comes on top of these figures.

    python bench/heartbeat_dispatch.py [--n 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import print_rows  # noqa: E402
from groupcoord.protocol.codec import decode_response, encode_request  # noqa: E402
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest  # noqa: E402
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest  # noqa: E402
from groupcoord.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol  # noqa: E402
from groupcoord.protocol.messages.sync_group import SyncGroupRequest  # noqa: E402
from groupcoord.server.broker import Broker  # noqa: E402
from groupcoord.server.config import ServerConfig  # noqa: E402
from groupcoord.server.net.listeners import single_plaintext  # noqa: E402


class Peer:
    """The dispatcher's view of a connection (`server.net.dispatch.Peer`)."""

    peer_host, peer_port, principal, transport = "127.0.0.1", 1, "User:ANONYMOUS", None
    listener = single_plaintext("127.0.0.1", 9092, None, None)

    def close(self, reason: str) -> None:
        raise RuntimeError(f"the server closed the connection: {reason}")


async def answer(b: Broker, peer: Peer, api: int, version: int, body: Any) -> Any:
    out = b.dispatcher.dispatch(peer, encode_request(api, version, 1, body)[4:])  # type: ignore[arg-type]
    if not isinstance(out, bytes):
        out = out.encode(await out.fut)  # type: ignore[union-attr]
    return decode_response(out[4:], api, version)[1]  # type: ignore[index]


def timed(b: Broker, peer: Peer, frame: bytes, n: int) -> float:
    dispatch = b.dispatcher.dispatch
    t0 = time.process_time()
    for _ in range(n):
        dispatch(peer, frame)  # type: ignore[arg-type]
    return (time.process_time() - t0) / n * 1e6


async def main(n: int) -> list[tuple[str, str]]:
    data = Path(tempfile.mkdtemp(prefix="bench-hb-"))
    cfg = ServerConfig(
        storage="memory", data_dir=data, port=0, journal=False, group_initial_rebalance_delay_ms=0
    )
    b = Broker(cfg)
    await b.start()
    await b.loaded  # type: ignore[misc]
    peer = Peer()
    await b.topics.create("bench", 8)  # type: ignore[union-attr]
    join = JoinGroupRequest(
        group_id="classic", session_timeout_ms=45000, rebalance_timeout_ms=60000, member_id="",
        group_instance_id="i-1", protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )  # fmt: skip
    j = await answer(b, peer, 11, 5, join)
    sync = SyncGroupRequest(group_id="classic", generation_id=j.generation_id, member_id=j.member_id,
                            group_instance_id="i-1")  # fmt: skip
    await answer(b, peer, 14, 3, sync)
    cg = ConsumerGroupHeartbeatRequest(
        group_id="modern", member_id="m-1", member_epoch=0, rebalance_timeout_ms=60000,
        subscribed_topic_names=("bench",), topic_partitions=(),
    )  # fmt: skip
    r = await answer(b, peer, 68, 1, cg)
    for _ in range(20):  # reconcile to the steady state (the member owns its partitions at the group epoch)
        owned = r.assignment.topic_partitions if r.assignment is not None else ()
        cg = ConsumerGroupHeartbeatRequest(
            group_id="modern", member_id=r.member_id or cg.member_id, member_epoch=r.member_epoch,
            topic_partitions=owned,
        )  # fmt: skip
        r = await answer(b, peer, 68, 1, cg)
        await asyncio.sleep(0.05)
    assert r.error_code == 0, r
    steady = ConsumerGroupHeartbeatRequest(
        group_id="modern", member_id=cg.member_id, member_epoch=r.member_epoch
    )
    assert (await answer(b, peer, 68, 1, steady)).error_code == 0
    rows = []
    for v in (3, 4):
        hb = encode_request(12, v, 7, HeartbeatRequest("classic", j.generation_id, j.member_id, "i-1"))[4:]
        rows.append((f"Heartbeat v{v}, fast lane", f"{timed(b, peer, hb, n):.2f} µs"))
        lanes, b.dispatcher.fast_lanes = b.dispatcher.fast_lanes, {}
        rows.append((f"Heartbeat v{v}, general path", f"{timed(b, peer, hb, n // 4):.2f} µs"))
        b.dispatcher.fast_lanes = lanes
    frame = encode_request(68, 1, 7, steady)[4:]
    out = b.dispatcher.dispatch(peer, frame)  # type: ignore[arg-type]
    if isinstance(out, bytes):  # answered at once (the fast lane; an older checkout parks it)
        assert decode_response(out[4:], 68, 1)[1].error_code == 0, out
    rows.append(("ConsumerGroupHeartbeat v1, steady state, fast lane", f"{timed(b, peer, frame, n):.2f} µs"))
    lanes, b.dispatcher.fast_lanes = b.dispatcher.fast_lanes, {}
    rows.append(
        ("ConsumerGroupHeartbeat v1, steady state, general path", f"{timed(b, peer, frame, n // 4):.2f} µs")
    )
    b.dispatcher.fast_lanes = lanes
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    args = ap.parse_args()
    rows = asyncio.run(main(args.n))
    print_rows(
        "server CPU per heartbeat in the dispatcher, sockets excluded (bench/heartbeat_dispatch.py)", rows
    )
