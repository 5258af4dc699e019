"""The `groupcoord serve` options: one row per Kafka config name, as a `--kebab-name` flag and a
`GROUPCOORD_<NAME>` environment variable (`server/config.py` turns them into a `ServerConfig`), and the
parsers of the values that are not plain ints or strings."""

from __future__ import annotations

import argparse
from pathlib import Path


def consumer_assignors(text: str) -> tuple[str, ...]:
    """`group.consumer.assignors`: a comma-separated list of names (class names of Kafka's built-ins are
    accepted too); the first is the default."""
    aliases = {
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
    }
    return tuple(aliases.get(n.strip(), n.strip()) for n in text.split(",") if n.strip())


def parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_topic(text: str) -> tuple[str, int]:
    name, _, parts = text.rpartition(":")
    if not name:
        return text, 0
    try:
        return name, int(parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS, got {text!r}") from None


# (flag, type, help); the dest and env var are derived from the flag
OPTIONS: list[tuple[str, object, str]] = [
    ("--host", str, "address to listen on (default 127.0.0.1)"),
    ("--port", int, "port to listen on (default 9092)"),
    ("--advertised-host", str, "host clients are told to connect to (default: --host)"),
    ("--advertised-port", int, "port clients are told to connect to (default: --port)"),
    (
        "--listeners",
        str,
        "Kafka's listeners: NAME://host:port,... e.g. INTERNAL://0.0.0.0:9092,EXTERNAL://:19092 (an empty host "
        "binds every interface); when set, --host/--port/--advertised-host/--advertised-port are not used "
        "(default: one PLAINTEXT listener on --host:--port)",
    ),
    (
        "--advertised-listeners",
        str,
        "Kafka's advertised.listeners: NAME://host:port per listener, the address Metadata, FindCoordinator and "
        "DescribeCluster give clients that came in on that listener (default: the listener's own address)",
    ),
    (
        "--listener-security-protocol-map",
        str,
        "Kafka's listener.security.protocol.map: NAME:PROTOCOL,... with PLAINTEXT, SSL, SASL_PLAINTEXT or "
        "SASL_SSL (default PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL)",
    ),
    (
        "--ssl-keystore-location",
        str,
        "PEM file with the server's private key and certificate chain, for SSL and SASL_SSL listeners",
    ),
    ("--ssl-keystore-type", str, "PEM (the only type groupcoord reads; default PEM)"),
    ("--ssl-key-password", str, "password of the private key in --ssl-keystore-location, if it is encrypted"),
    (
        "--ssl-truststore-location",
        str,
        "PEM file of the CA certificates client certificates are checked against",
    ),
    ("--ssl-truststore-type", str, "PEM (the only type groupcoord reads; default PEM)"),
    ("--ssl-client-auth", str, "required, requested or none (default): ask SSL clients for a certificate"),
    (
        "--sasl-enabled-mechanisms",
        str,
        "SASL mechanisms of SASL_* listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (default all three)",
    ),
    (
        "--sasl-jaas-config",
        str,
        "PLAIN users as Kafka's PlainLoginModule JAAS config: "
        "'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"secret\";'",
    ),
    (
        "--sasl-jaas-config-file",
        str,
        "a file holding --sasl-jaas-config's text, so the passwords are not on the command line (or give the "
        "text in the environment variable GROUPCOORD_SASL_JAAS_CONFIG)",
    ),
    (
        "--add-scram",
        str,
        "SCRAM users to create (or reset) at start, stored durably, kafka-storage's syntax: "
        "'SCRAM-SHA-256=[name=alice,password=alice-secret]'; several separated by ';'",
    ),
    (
        "--add-scram-file",
        str,
        "a file holding --add-scram's text (entries separated by ';' or new lines), so the passwords are not "
        "on the command line (or use the environment variable GROUPCOORD_ADD_SCRAM)",
    ),
    (
        "--sasl-server-max-receive-size",
        int,
        "largest request frame a SASL listener reads before authentication; larger closes the connection "
        "unread (default 524288)",
    ),
    (
        "--connection-failed-authentication-delay-ms",
        int,
        "how long the answer to a failed SASL authentication (and the close) is held back, to slow password "
        "guessing; other connections are served meanwhile (default 100)",
    ),
    (
        "--authorizer-class-name",
        str,
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on: deny unless an ACL allows "
        "(default: none, everything allowed)",
    ),
    (
        "--super-users",
        str,
        "principals every check allows, ';'-separated: 'User:admin;User:CN=ops' (default none)",
    ),
    (
        "--allow-everyone-if-no-acl-found",
        parse_bool,
        "with the authorizer on, allow access to a resource no ACL names (default false)",
    ),
    (
        "--inter-broker-listener-name",
        str,
        "the listener nodes of a cluster talk to each other on (forwarded transaction markers); its advertised "
        "address is the one the node registers (default: the first listener)",
    ),
    (
        "--security-inter-broker-protocol",
        str,
        "instead of --inter-broker-listener-name: the inter-broker listener by security protocol name",
    ),
    (
        "--sasl-mechanism-inter-broker-protocol",
        str,
        "SASL mechanism for inter-broker connections: PLAIN (default), SCRAM-SHA-256 or SCRAM-SHA-512; the "
        'login is username="..." password="..." in --sasl-jaas-config',
    ),
    (
        "--ssl-endpoint-identification-algorithm",
        str,
        "https (default): a node connecting to another over TLS checks that its certificate names the host it "
        "connects to; empty: not checked (the certificate still must chain to the trust store)",
    ),
    ("--node-id", int, "this node's broker id in Metadata/FindCoordinator (default 0)"),
    (
        "--broker-rack",
        str,
        "rack id advertised for this broker in Metadata (Kafka's broker.rack; default none)",
    ),
    ("--cluster-id", str, "cluster id returned in Metadata (default groupcoord-cluster)"),
    (
        "--data-dir",
        Path,
        "where offsets, group metadata, topic logs and the event journal live (default ./data)",
    ),
    (
        "--group-initial-rebalance-delay-ms",
        int,
        "how long the first rebalance of an Empty group waits for more members (default 3000)",
    ),
    ("--group-min-session-timeout-ms", int, "smallest session timeout a member may ask for (default 6000)"),
    ("--group-max-session-timeout-ms", int, "largest session timeout a member may ask for (default 1800000)"),
    ("--group-max-size", int, "most members a group may have (default unlimited: 2147483647)"),
    ("--group-consumer-session-timeout-ms", int, "KIP-848 consumer group session timeout (default 45000)"),
    (
        "--group-consumer-min-session-timeout-ms",
        int,
        "lower bound of the consumer session timeout (default 45000)",
    ),
    (
        "--group-consumer-max-session-timeout-ms",
        int,
        "upper bound of the consumer session timeout (default 60000)",
    ),
    (
        "--group-consumer-heartbeat-interval-ms",
        int,
        "heartbeat interval given to consumer members (default 5000)",
    ),
    (
        "--group-consumer-min-heartbeat-interval-ms",
        int,
        "lower bound of the heartbeat interval (default 5000)",
    ),
    (
        "--group-consumer-max-heartbeat-interval-ms",
        int,
        "upper bound of the heartbeat interval (default 15000)",
    ),
    ("--group-consumer-max-size", int, "most members a consumer group may have (default 2147483647)"),
    ("--group-consumer-assignors", str, "server assignors, the first the default (default uniform,range)"),
    (
        "--group-consumer-assignment-interval-ms",
        int,
        "least time between two target assignments of a consumer group; 0: at once (default 1000)",
    ),
    (
        "--group-consumer-min-assignment-interval-ms",
        int,
        "lower bound of the assignment interval (default 0)",
    ),
    (
        "--group-consumer-max-assignment-interval-ms",
        int,
        "upper bound of the assignment interval (default 15000)",
    ),
    (
        "--group-consumer-migration-policy",
        str,
        "online classic<->consumer group migration: disabled, upgrade, downgrade or bidirectional "
        "(default bidirectional)",
    ),
    # KIP-1071 streams groups: Kafka 4.4's group.streams.* (defaults as Kafka's)
    ("--group-streams-session-timeout-ms", int, "session timeout of streams group members (default 45000)"),
    (
        "--group-streams-heartbeat-interval-ms",
        int,
        "heartbeat interval given to streams members (default 5000)",
    ),
    ("--group-streams-max-size", int, "most members a streams group may have (default 2147483647)"),
    (
        "--group-streams-num-standby-replicas",
        int,
        "standby replicas of each stateful task (default 0, max 2)",
    ),
    (
        "--group-streams-initial-rebalance-delay-ms",
        int,
        "how long a new streams group waits before its first assignment (default 3000)",
    ),
    (
        "--group-streams-assignment-interval-ms",
        int,
        "least time between two target assignments of a streams group; 0: at once (default 1000)",
    ),
    (
        "--offsets-retention-minutes",
        int,
        "how long offsets of an empty group are kept (default 10080 = 7 days)",
    ),
    ("--offsets-retention-check-interval-ms", int, "how often expired offsets are removed (default 600000)"),
    (
        "--offset-metadata-max-bytes",
        int,
        "longest metadata string allowed with a committed offset (default 4096)",
    ),
    (
        "--transaction-max-timeout-ms",
        int,
        "largest transaction.timeout.ms a transactional producer may ask for (default 900000)",
    ),
    (
        "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
        int,
        "how often transactions past their timeout are aborted (default 10000)",
    ),
    (
        "--socket-request-max-bytes",
        int,
        "largest request frame accepted; larger closes the connection (default 104857600)",
    ),
    (
        "--connections-max-idle-ms",
        int,
        "close a connection after this long without traffic (Kafka's connections.max.idle.ms; default 600000)",
    ),
    (
        "--request-frame-timeout-ms",
        int,
        "close a connection whose started request frame has not fully arrived after this long (groupcoord's "
        "own guard against slow senders; default 30000)",
    ),
    (
        "--max-connections-per-ip",
        int,
        "most connections from one client address; more are closed at once (default 2147483647)",
    ),
    (
        "--max-connections",
        int,
        "most client connections in total; more are closed at once (default 2147483647)",
    ),
    (
        "--auto-create-topics-enable",
        parse_bool,
        "create unknown topics named in Metadata requests (default true)",
    ),
    ("--group-share-enable", parse_bool, "serve KIP-932 share groups (APIs 76-79; default true)"),
    ("--group-share-max-size", int, "most members a share group may have (default 200)"),
    ("--group-share-session-timeout-ms", int, "a silent share-group member is removed after (default 45000)"),
    ("--group-share-heartbeat-interval-ms", int, "heartbeat interval given to share members (default 5000)"),
    (
        "--group-share-record-lock-duration-ms",
        int,
        "acquisition lock of a share-fetched record (default 30000)",
    ),
    ("--group-share-delivery-count-limit", int, "deliveries of a record before it is archived (default 5)"),
    (
        "--group-share-partition-max-record-locks",
        int,
        "most in-flight records per share partition (default 2000)",
    ),
    ("--group-share-max-share-sessions", int, "most share sessions this broker keeps (default 2000)"),
    (
        "--share-auto-offset-reset",
        str,
        "where a share partition starts at its first fetch: latest or earliest (default latest)",
    ),
    ("--num-partitions", int, "partitions of auto-created topics (default 1)"),
    (
        "--offsets-topic-num-partitions",
        int,
        "partitions the internal __consumer_offsets topic is listed with in Metadata (default 50)",
    ),
    (
        "--storage",
        str,
        "disk (durable, the default), memory (nothing survives a restart) or a postgresql://user@host:port/db "
        "URL (group metadata and offsets in PostgreSQL; topic data stays in segment files under --data-dir)",
    ),
    (
        "--cluster",
        str,
        "a postgresql:// URL: run as one node of a cluster whose nodes share that database; groups are sharded "
        "over the live nodes by lease (docs/cluster.md); needs a distinct --node-id per node",
    ),
    (
        "--cluster-lease-ttl-ms",
        int,
        "cluster mode: how long a shard lease lasts unrenewed, judged by the database clock; an unplanned "
        "failover takes about this long (default 5000)",
    ),
    (
        "--cluster-handover-per-tick",
        int,
        "cluster mode: the most shards, and the most partitions, a node above its share hands back per lease "
        "tick (ttl/10), so a node that joins or restarts gets its share at a measured pace (default 10)",
    ),
    (
        "--log-flush",
        str,
        "acks-all (default: fsync the topic log before acknowledging acks=all writes) or never (leave it to the "
        "OS); committed offsets and group metadata are always durable before they are acknowledged",
    ),
    ("--journal", parse_bool, "write the group event journal under <data-dir>/journal (default true)"),
    ("--journal-max-bytes", int, "rotate journal files at this size (default 67108864)"),
    (
        "--journal-lag-snapshot-interval-ms",
        int,
        "journal each group's committed offsets and log end offsets this often, for the report's lag "
        "analytics (default 60000; 0: never)",
    ),
    (
        "--journal-parquet",
        str,
        "auto (default: on when pyarrow is installed), on or off: roll each closed journal file into a "
        "columnar Parquet segment, in a separate process (docs/journal.md)",
    ),
    ("--log-format", str, "console (default) or json"),
    ("--log-level", str, "debug, info (default), warning or error"),
    (
        "--metrics-port",
        int,
        "serve Prometheus /metrics, /health and /ready on this port (default 0: off; docs/operations.md)",
    ),
    ("--metrics-host", str, "address of the metrics listener (default 127.0.0.1)"),
    ("--log-retention-ms", int, "default retention.ms of every topic (default: from --log-retention-hours)"),
    ("--log-retention-minutes", int, "default retention in minutes, used when --log-retention-ms is not set"),
    (
        "--log-retention-hours",
        int,
        "default retention in hours (default 168), used when the two above are not set",
    ),
    ("--log-retention-bytes", int, "default retention.bytes per partition (default -1: no size limit)"),
    ("--log-segment-bytes", int, "default segment.bytes (default 1073741824)"),
    ("--log-cleanup-policy", str, "default cleanup.policy: delete (default), compact or compact,delete"),
    (
        "--console",
        parse_bool,
        "serve the read-only live web console at /ui on the --metrics-port listener (default true; "
        "docs/console.md)",
    ),
    (
        "--metrics-partition-lag",
        parse_bool,
        "export per-partition lag and offset series; false keeps only the per-topic sums (default true)",
    ),
    (
        "--log-retention-check-interval-ms",
        int,
        "how often segments past retention.ms/retention.bytes or the log start offset are deleted "
        "(default 300000)",
    ),
    (
        "--log-cleaner-backoff-ms",
        int,
        "pause between compaction passes over compacted topics (default 15000)",
    ),
    ("--log-cleaner-enable", parse_bool, "compact topics with cleanup.policy=compact (default true)"),
    (
        "--log-cleaner-io-max-bytes-per-second",
        float,
        "cap on the cleaner's read+write rate (default unlimited)",
    ),
    # test controls (docs/testing.md); not Kafka settings
    (
        "--virtual-clock",
        parse_bool,
        "tests only: group timers and offset retention run on a clock that POST /v1/clock/advance moves "
        "(default false: the wall clock)",
    ),
    ("--control-host", str, "address of the HTTP control endpoint (default 127.0.0.1)"),
    (
        "--control-port",
        int,
        "tests only: serve the HTTP control endpoint (clock, faults, group waits) on this port; 0 picks a "
        "free one (default: off)",
    ),
]


def env_name(flag: str) -> str:
    return "GROUPCOORD_" + flag.lstrip("-").replace("-", "_").upper()
