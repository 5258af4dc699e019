"""Over-the-wire data-plane benchmark: Produce and Fetch MB/s and durable OffsetCommit throughput.

Starts a real `groupcoord serve` (disk storage, default flush policy) on a free loopback port and drives it
with pre-encoded raw-protocol frames from this process: the figures are what the server sustains, with the
client side kept as thin as possible. Not a test; prints a table. `--quick` for a short run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiokafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from bench.harness import print_rows, throwaway_server  # noqa: E402
from groupcoord.protocol.codec import decode_response, encode_request  # noqa: E402
from groupcoord.protocol.messages import fetch as fe  # noqa: E402
from groupcoord.protocol.messages import offset_commit as oc  # noqa: E402
from groupcoord.protocol.messages import produce as pr  # noqa: E402
from groupcoord.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest  # noqa: E402

RECORD = b"x" * 1024


def batch(records: int) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=10 * 1024 * 1024)  # fmt: skip
    now = int(time.time() * 1000)
    for i in range(records):
        b.append(i, timestamp=now, key=None, value=RECORD, headers=[])
    return bytes(b.build())


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.corr = reader, writer, 0

    @classmethod
    async def open(cls, port: int) -> Conn:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        return cls(r, w)

    async def call(self, api: int, version: int, body: object) -> object:
        self.corr += 1
        self.writer.write(encode_request(api, version, self.corr, body))
        return await self.read(api, version)

    async def send_raw(self, frame: bytes) -> None:
        self.writer.write(frame)

    async def read(self, api: int, version: int) -> object:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        _, resp = decode_response(await self.reader.readexactly(size), api, version)
        return resp

    async def read_raw(self) -> int:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        await self.reader.readexactly(size)
        return size


async def produce_bench(
    port: int, acks: int, seconds: float, conns: int, per_batch: int
) -> tuple[float, int]:
    blob = batch(per_batch)
    req = pr.ProduceRequest(acks=acks, timeout_ms=30000, topic_data=(
        pr.TopicProduceData(name="bench", partition_data=(pr.PartitionProduceData(index=0, records=blob),)),))  # fmt: skip
    frame = encode_request(0, 9, 1, req)
    clients = [await Conn.open(port) for _ in range(conns)]
    sent = 0
    stop = time.perf_counter() + seconds

    async def loop(c: Conn) -> None:
        nonlocal sent
        while time.perf_counter() < stop:
            await c.send_raw(frame)
            await c.read_raw()
            sent += len(blob)

    t0 = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in clients))
    elapsed = time.perf_counter() - t0
    for c in clients:
        c.writer.close()
    return sent / elapsed / 1e6, sent


async def fetch_bench(port: int, seconds: float, total_bytes: int) -> float:
    c = await Conn.open(port)
    got = 0
    offset = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds and got < total_bytes:
        req = fe.FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, topics=(
            fe.FetchTopic(topic="bench", partitions=(fe.FetchPartition(partition=0, fetch_offset=offset,
                                                                        partition_max_bytes=4 << 20),)),))  # fmt: skip
        resp = await c.call(1, 12, req)
        records = resp.responses[0].partitions[0].records or b""  # type: ignore[attr-defined]
        if not records:
            break
        got += len(records)
        pos = 0
        while pos + 12 <= len(records):  # walk batch headers to the next offset
            base, length = struct.unpack_from(">qi", records, pos)
            last_delta = struct.unpack_from(">i", records, pos + 23)[0]
            offset = base + last_delta + 1
            pos += 12 + length
    elapsed = time.perf_counter() - t0
    c.writer.close()
    return got / elapsed / 1e6


async def commit_bench(port: int, seconds: float, conns: int, partitions: int) -> float:
    committed = 0
    stop = time.perf_counter() + seconds

    async def loop(i: int) -> None:
        nonlocal committed
        c = await Conn.open(port)
        n = 0
        while time.perf_counter() < stop:
            n += 1
            body = oc.OffsetCommitRequest(group_id=f"bench-{i}", generation_id_or_member_epoch=-1, topics=(
                oc.OffsetCommitRequestTopic(name="wide", partitions=tuple(
                    oc.OffsetCommitRequestPartition(partition_index=p, committed_offset=n)
                    for p in range(partitions))),))  # fmt: skip
            resp = await c.call(8, 8, body)
            assert all(p.error_code == 0 for t in resp.topics for p in t.partitions), resp  # type: ignore[attr-defined]
            committed += partitions
        c.writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(loop(i) for i in range(conns)))
    return committed / (time.perf_counter() - t0)


async def run(port: int, quick: bool) -> list[tuple[str, str]]:
    secs = 3.0 if quick else 8.0
    admin = await Conn.open(port)
    topics = (
        CreatableTopic(name="bench", num_partitions=1, replication_factor=1),
        CreatableTopic(name="wide", num_partitions=100, replication_factor=1),
    )
    await admin.call(19, 7, CreateTopicsRequest(topics=topics, timeout_ms=30000))
    rows = []
    mbps, _ = await produce_bench(port, 1, secs, conns=4, per_batch=256)
    rows.append(("Produce acks=1, 1 KB records, 256/batch, 4 conns", f"{mbps:.0f} MB/s"))
    mbps, _total = await produce_bench(port, -1, secs, conns=4, per_batch=256)
    rows.append(("Produce acks=all (fsync before ack), 4 conns", f"{mbps:.0f} MB/s"))
    rows.append(
        ("Fetch, 1 conn, 4 MB max per partition", f"{await fetch_bench(port, secs, 1 << 40):.0f} MB/s")
    )
    rate = await commit_bench(port, secs, conns=64, partitions=100)
    rows.append(("OffsetCommit, durable, 64 groups × 100 partitions", f"{rate:,.0f} offsets/s"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    with throwaway_server() as port:
        rows = asyncio.run(run(port, args.quick))
    print_rows(f"data plane over the wire ({os.cpu_count()} CPUs, server and client on one machine)", rows)


if __name__ == "__main__":
    main()
