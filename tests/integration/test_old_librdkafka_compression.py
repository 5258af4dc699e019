"""An old librdkafka compresses against groupcoord (KAFKA-18659).

librdkafka before the fix of confluentinc/librdkafka#4956 (here confluent-kafka 2.6.1) decides from the
broker's Produce range whether it takes gzip, lz4 and snappy batches: it needs v0-2 in range. Kafka 4.x
removed those versions but still advertises Produce from v0 for this reason; groupcoord does the same
(`groupcoord.protocol.api.ADVERTISED_MIN`). Advertised from v3, the client silently sent 50 records of 1 KB
uncompressed (~51 KB stored instead of a few hundred bytes).

The old client runs in a subprocess with its own PYTHONPATH (tests/drivers/setup.sh installs it into
.venv/drivers/ck261, apart from the confluent-kafka 2.16 the other tests import).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from groupcoord.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from tests.integration import drivers
from tests.integration.helpers import RawClient

CODECS = ("gzip", "lz4", "snappy", "none")

PRODUCER = textwrap.dedent(
    """
    import sys
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    assert confluent_kafka.libversion()[0] == "2.6.1", confluent_kafka.libversion()
    bootstrap, codecs = sys.argv[1], sys.argv[2:]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(f"old-{c}", 1, 1) for c in codecs]).values():
        fut.result(60)
    for codec in codecs:
        p = confluent_kafka.Producer(
            {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 200, "acks": "all"}
        )
        for i in range(50):
            p.produce(f"old-{codec}", value=(b"%04d" % i) * 256, partition=0)
        assert p.flush(60) == 0, "records left unsent"
    print("produced")
    """
)


def _sizes(host: str, port: int) -> dict[str, int]:
    """Bytes stored per topic, as DescribeLogDirs reports them (partition 0 of each)."""
    c = RawClient(host, port)
    try:
        resp = c.request(35, 4, DescribeLogDirsRequest(topics=None))
    finally:
        c.close()
    return {t.name: sum(p.partition_size for p in t.partitions) for r in resp.results for t in r.topics}


def test_librdkafka_2_6_1_stores_compressed_batches(server_factory) -> None:  # type: ignore[no-untyped-def]
    folder = drivers.old_librdkafka_path()
    srv = server_factory()
    env = dict(os.environ, PYTHONPATH=str(folder))
    done = subprocess.run(
        [sys.executable, "-c", PRODUCER, srv.bootstrap, *CODECS],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0 and "produced" in done.stdout, done.stderr[-4000:]
    sizes = _sizes(srv.host, srv.port)
    assert sizes["old-none"] > 50 * 1024, sizes  # 50 records of 1 KB, uncompressed: the control
    for codec in ("gzip", "lz4", "snappy"):
        # 51 KB of repetitive values: a compressed batch is a few hundred bytes, an uncompressed one ~51 KB
        assert sizes[f"old-{codec}"] < 5 * 1024, (codec, sizes)
