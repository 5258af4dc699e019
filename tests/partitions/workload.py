"""The clients of a partition run (issue 43), run inside the clients' namespace: real aiokafka clients.

* an idempotent producer (`enable_idempotence`, acks=all) sends "v<i>" to topic `jp` from a few concurrent
  senders and logs every acknowledged send with its partition and offset;
* a consumer group `jg` of two members polls `jp` and commits what it polled after every batch; it logs
  every poll (partition, first and last offset), every acknowledged commit, and on every assignment the
  committed offset it resumed from.

Every line of the history (JSON, one per event, with the monotonic and wall times) is flushed at once, so a
history is complete up to the moment the process is stopped. It stops when `<history>.stop` appears.

    python -m tests.partitions.workload BOOTSTRAP HISTORY
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path
from typing import IO, Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener

TOPIC, GROUP = "jp", "jg"
SENDERS = 4
CLIENT = {"request_timeout_ms": 5000, "metadata_max_age_ms": 1000, "retry_backoff_ms": 100}


class History:
    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def log(self, op: str, **fields: Any) -> None:
        self.out.write(json.dumps({"op": op, "t": time.time(), **fields}) + "\n")
        self.out.flush()


async def produce(bootstrap: str, history: History, stop: Path) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", **CLIENT)
    while not stop.exists():
        try:
            await producer.start()
            break
        except Exception:
            await asyncio.sleep(0.5)
    counter = iter(range(10**9))

    async def sender(worker: int) -> None:
        while not stop.exists():
            i = next(counter)
            value = f"v{i}"
            history.log("send", v=value)
            try:
                md = await asyncio.wait_for(producer.send_and_wait(TOPIC, value.encode()), 30)
            except Exception as e:
                history.log("send-fail", v=value, error=type(e).__name__)
                await asyncio.sleep(0.2)
                continue
            history.log("produced", v=value, p=md.partition, o=md.offset)
            await asyncio.sleep(0.02)

    await asyncio.gather(*(sender(w) for w in range(SENDERS)))
    await producer.stop()


class _Resumes(ConsumerRebalanceListener):
    def __init__(self, consumer: AIOKafkaConsumer, member: int, history: History) -> None:
        self.consumer, self.member, self.history = consumer, member, history

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.history.log("revoked", m=self.member, ps=sorted(tp.partition for tp in revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        for tp in sorted(assigned, key=lambda x: x.partition):
            try:
                committed = await self.consumer.committed(tp)
            except Exception:
                committed = "?"
            self.history.log("assigned", m=self.member, p=tp.partition, committed=committed)


async def consume(bootstrap: str, member: int, history: History, stop: Path) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
        **CLIENT,
    )
    consumer.subscribe([TOPIC], listener=_Resumes(consumer, member, history))
    while not stop.exists():
        try:
            await consumer.start()
            break
        except Exception:
            await asyncio.sleep(0.5)
    while not stop.exists():
        try:
            batches = await consumer.getmany(timeout_ms=500)
        except Exception as e:
            history.log("poll-fail", m=member, error=type(e).__name__)
            await asyncio.sleep(0.5)
            continue
        if not batches:
            continue
        offsets = {}
        for tp, records in batches.items():
            history.log("polled", m=member, p=tp.partition, first=records[0].offset, last=records[-1].offset)
            offsets[tp] = records[-1].offset + 1
        try:
            await asyncio.wait_for(consumer.commit(offsets), 30)
        except Exception as e:
            history.log("commit-fail", m=member, error=type(e).__name__)
            continue
        for tp, offset in offsets.items():
            history.log("committed", m=member, p=tp.partition, o=offset)
    await consumer.stop()


async def main(bootstrap: str, path: Path) -> None:
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    stop = path.with_suffix(".stop")
    with path.open("a") as out:
        history = History(out)
        history.log("start")
        await asyncio.gather(
            produce(bootstrap, history, stop),
            consume(bootstrap, 1, history, stop),
            consume(bootstrap, 2, history, stop),
        )
        history.log("stop")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
