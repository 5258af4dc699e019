"""Server configuration: Kafka's config names, as flags and as GROUPCOORD_* environment variables.

Every option `--foo-bar` (Kafka's `foo.bar`) can also come from `GROUPCOORD_FOO_BAR`; a flag beats the
environment, the environment beats the default. Defaults are Kafka's.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.server.coordinator.modern.consumer.api import MIGRATION_POLICIES, ConsumerGroupConfig
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig
from groupcoord.server.coordinator.modern.streams.api import StreamsGroupConfig
from groupcoord.server.coordinator.types import CoordinatorConfig
from groupcoord.server.journal.roll import pyarrow_available
from groupcoord.server.net.listeners import Listener, ListenerError, build_listeners, single_plaintext
from groupcoord.server.options import OPTIONS, consumer_assignors, env_name, parse_topic


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    # Kafka's listeners settings; when `listeners` is set, host/port/advertised-* above are not used
    listeners: str | None = None
    advertised_listeners: str | None = None
    listener_security_protocol_map: str | None = None
    # security (server/security, docs/security.md): Kafka's names
    ssl_keystore_location: str | None = None
    ssl_keystore_type: str = "PEM"
    ssl_key_password: str | None = None
    ssl_truststore_location: str | None = None
    ssl_truststore_type: str = "PEM"
    ssl_client_auth: str = "none"
    sasl_enabled_mechanisms: str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    sasl_jaas_config: str | None = None
    sasl_jaas_config_file: str | None = None  # groupcoord's: the same text from a file (keeps it off argv)
    add_scram: str | None = None
    add_scram_file: str | None = None  # groupcoord's: --add-scram's text from a file
    sasl_server_max_receive_size: int = 524288
    connection_failed_authentication_delay_ms: int = 100
    authorizer_class_name: str | None = None
    super_users: str | None = None
    allow_everyone_if_no_acl_found: bool = False
    # inter-broker traffic (cluster mode's forwarded markers; server/security/inter_broker.py): Kafka's names
    inter_broker_listener_name: str | None = None
    security_inter_broker_protocol: str | None = None
    sasl_mechanism_inter_broker_protocol: str = "PLAIN"
    ssl_endpoint_identification_algorithm: str = "https"  # "" : the other node's host name is not checked
    node_id: int = 0
    broker_rack: str | None = None
    cluster_id: str = "groupcoord-cluster"
    data_dir: Path = Path("./data")
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2**31 - 1
    # KIP-848 consumer groups: Kafka 4.3's group.consumer.* (defaults as Kafka's)
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_min_session_timeout_ms: int = 45000
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_max_size: int = 2**31 - 1
    group_consumer_assignors: str = "uniform,range"
    group_consumer_assignment_interval_ms: int = 1000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15000
    group_consumer_migration_policy: str = "bidirectional"
    # KIP-1071 streams groups: Kafka 4.4's group.streams.*
    group_streams_session_timeout_ms: int = 45000
    group_streams_heartbeat_interval_ms: int = 5000
    group_streams_max_size: int = 2**31 - 1
    group_streams_num_standby_replicas: int = 0
    group_streams_initial_rebalance_delay_ms: int = 3000
    group_streams_assignment_interval_ms: int = 1000
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    transaction_max_timeout_ms: int = 900000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    socket_request_max_bytes: int = 104857600
    connections_max_idle_ms: int = 600000
    request_frame_timeout_ms: int = 30000
    max_connections_per_ip: int = 2**31 - 1
    max_connections: int = 2**31 - 1
    auto_create_topics_enable: bool = True
    # KIP-932 share groups (docs/share-groups.md): Kafka's `group.share.*` broker configs and defaults
    group_share_enable: bool = True
    group_share_max_size: int = 200
    group_share_session_timeout_ms: int = 45000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_record_lock_duration_ms: int = 30000
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2000
    group_share_max_share_sessions: int = 2000
    share_auto_offset_reset: str = "latest"
    num_partitions: int = 1
    offsets_topic_num_partitions: int = 50
    topics: tuple[tuple[str, int], ...] = field(default_factory=tuple)
    storage: str = "disk"
    cluster: str = ""  # postgresql:// URL: cluster mode (server/cluster), groups sharded over the nodes
    cluster_lease_ttl_ms: int = 5000
    cluster_handover_per_tick: int = 10  # shards (and partitions) a node hands back per lease tick
    log_flush: str = "acks-all"
    journal: bool = True
    journal_max_bytes: int = 64 * 1024 * 1024
    journal_lag_snapshot_interval_ms: int = 60_000
    journal_parquet: str = "auto"
    log_format: str = "console"
    log_level: str = "info"
    metrics_port: int = 0
    metrics_host: str = "127.0.0.1"
    metrics_partition_lag: bool = True
    console: bool = True
    # static log defaults (Kafka's server.properties); None: not set, Kafka's default applies
    log_retention_ms: int | None = None
    log_retention_minutes: int | None = None
    log_retention_hours: int | None = None
    log_retention_bytes: int | None = None
    log_segment_bytes: int | None = None
    log_cleanup_policy: str | None = None
    log_retention_check_interval_ms: int = 300000
    log_cleaner_backoff_ms: int = 15000
    log_cleaner_enable: bool = True
    log_cleaner_io_max_bytes_per_second: float = float("inf")
    # test controls (server/control, docs/testing.md): all off unless asked for
    virtual_clock: bool = False
    control_host: str = "127.0.0.1"
    control_port: int | None = None

    @property
    def public_host(self) -> str:
        return self.advertised_host or self.host

    @property
    def public_port(self) -> int:
        return self.advertised_port or self.port

    @property
    def kafka_listeners(self) -> str:
        """Kafka's `listeners` as DescribeConfigs shows it: --listeners, or the shorthand's PLAINTEXT listener."""
        return self.listeners or f"PLAINTEXT://{self.host}:{self.port}"

    @property
    def kafka_advertised_listeners(self) -> str | None:
        """Kafka's `advertised.listeners` as DescribeConfigs shows it (None: unset, `listeners` is advertised)."""
        if self.listeners:
            return self.advertised_listeners
        if self.advertised_host or self.advertised_port:
            return f"PLAINTEXT://{self.public_host}:{self.public_port}"
        return None

    def listener_list(self) -> tuple[Listener, ...]:
        """The listeners to open: `--listeners` (Kafka's format), or one PLAINTEXT listener from the old
        `--host/--port` shorthand. Raises `ListenerError` for settings Kafka refuses."""
        if self.listeners:
            return build_listeners(
                self.listeners, self.advertised_listeners, self.listener_security_protocol_map
            )
        if self.advertised_listeners:
            raise ListenerError("advertised.listeners needs listeners")
        return (single_plaintext(self.host, self.port, self.advertised_host, self.advertised_port),)

    def share(self) -> ShareGroupConfig:
        return ShareGroupConfig(
            enable=self.group_share_enable,
            max_size=self.group_share_max_size,
            session_timeout_ms=self.group_share_session_timeout_ms,
            heartbeat_interval_ms=self.group_share_heartbeat_interval_ms,
            record_lock_duration_ms=self.group_share_record_lock_duration_ms,
            delivery_count_limit=self.group_share_delivery_count_limit,
            partition_max_record_locks=self.group_share_partition_max_record_locks,
            max_share_sessions=self.group_share_max_share_sessions,
            auto_offset_reset=self.share_auto_offset_reset,
        )

    def coordinator(self) -> CoordinatorConfig:
        return CoordinatorConfig(
            initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms,
            min_session_timeout_ms=self.group_min_session_timeout_ms,
            max_session_timeout_ms=self.group_max_session_timeout_ms,
            max_size=self.group_max_size,
            offsets_retention_ms=self.offsets_retention_minutes * 60_000,
            offset_metadata_max_bytes=self.offset_metadata_max_bytes,
        )

    def consumer_group(self) -> ConsumerGroupConfig:
        """The KIP-848 consumer-group settings (`group.consumer.*`)."""
        return ConsumerGroupConfig(
            session_timeout_ms=self.group_consumer_session_timeout_ms,
            heartbeat_interval_ms=self.group_consumer_heartbeat_interval_ms,
            max_size=self.group_consumer_max_size,
            assignors=consumer_assignors(self.group_consumer_assignors),
            assignment_interval_ms=self.group_consumer_assignment_interval_ms,
            migration_policy=self.group_consumer_migration_policy.strip().lower(),
        )

    def streams_group(self) -> StreamsGroupConfig:
        """The KIP-1071 streams-group settings (`group.streams.*`)."""
        return StreamsGroupConfig(
            session_timeout_ms=self.group_streams_session_timeout_ms,
            heartbeat_interval_ms=self.group_streams_heartbeat_interval_ms,
            max_size=self.group_streams_max_size,
            num_standby_replicas=self.group_streams_num_standby_replicas,
            initial_rebalance_delay_ms=self.group_streams_initial_rebalance_delay_ms,
            assignment_interval_ms=self.group_streams_assignment_interval_ms,
        )


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    for flag, typ, text in OPTIONS:
        parser.add_argument(flag, type=typ, default=None, help=f"{text} [env {env_name(flag)}]")  # type: ignore[arg-type]
    parser.add_argument(
        "--topic",
        dest="topics",
        action="append",
        type=parse_topic,
        default=None,
        metavar="NAME:PARTITIONS",
        help="create this topic at start if missing; repeatable [env GROUPCOORD_TOPIC, comma-separated]",
    )


def config_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None) -> ServerConfig:
    """Flags, then GROUPCOORD_* variables, then Kafka's defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for flag, typ, _ in OPTIONS:
        dest = flag.lstrip("-").replace("-", "_")
        value = getattr(args, dest, None)
        if value is None and env_name(flag) in env:
            try:
                value = typ(env[env_name(flag)])  # type: ignore[operator]
            except (ValueError, argparse.ArgumentTypeError) as exc:
                raise SystemExit(f"groupcoord: bad value for {env_name(flag)}: {exc}") from None
        if value is not None:
            values[dest] = value
    topics = getattr(args, "topics", None)
    if topics is None and env.get("GROUPCOORD_TOPIC"):
        topics = [parse_topic(t) for t in env["GROUPCOORD_TOPIC"].split(",") if t.strip()]
    if topics:
        values["topics"] = tuple(topics)
    cfg = ServerConfig(**values)  # type: ignore[arg-type]
    _validate(cfg)
    return cfg


#: URL schemes `--storage` accepts for the PostgreSQL store (libpq's two spellings)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def _consumer_group_problems(cfg: ServerConfig) -> list[str]:
    """Kafka's checks of the group.consumer.* settings (GroupCoordinatorConfig)."""
    problems = []
    for name, value, lo, hi in (
        ("session-timeout-ms", cfg.group_consumer_session_timeout_ms, cfg.group_consumer_min_session_timeout_ms,
         cfg.group_consumer_max_session_timeout_ms),
        ("heartbeat-interval-ms", cfg.group_consumer_heartbeat_interval_ms,
         cfg.group_consumer_min_heartbeat_interval_ms, cfg.group_consumer_max_heartbeat_interval_ms),
        ("assignment-interval-ms", cfg.group_consumer_assignment_interval_ms,
         cfg.group_consumer_min_assignment_interval_ms, cfg.group_consumer_max_assignment_interval_ms),
    ):  # fmt: skip
        if not lo <= value <= hi:
            problems.append(f"--group-consumer-{name} must be between {lo} and {hi}")
    if cfg.group_consumer_heartbeat_interval_ms >= cfg.group_consumer_session_timeout_ms:
        problems.append("--group-consumer-heartbeat-interval-ms must be less than the session timeout")
    if cfg.group_consumer_max_size < 1:
        problems.append("--group-consumer-max-size must be at least 1")
    names = consumer_assignors(cfg.group_consumer_assignors)
    if not names or any(n not in ("uniform", "range") for n in names) or len(set(names)) != len(names):
        problems.append("--group-consumer-assignors must list uniform and/or range, each once")
    if cfg.group_consumer_migration_policy.strip().lower() not in MIGRATION_POLICIES:
        problems.append("--group-consumer-migration-policy must be one of " + ", ".join(MIGRATION_POLICIES))
    return problems


def _validate(cfg: ServerConfig) -> None:
    problems = []
    try:
        cfg.listener_list()
    except ListenerError as exc:
        problems.append(str(exc))
    if cfg.storage not in ("disk", "memory") and not cfg.storage.startswith(POSTGRES_SCHEMES):
        problems.append("--storage must be disk, memory or a postgresql:// URL")
    if cfg.cluster and not cfg.cluster.startswith(POSTGRES_SCHEMES):
        problems.append("--cluster must be a postgresql:// URL")
    from groupcoord.server.storage.pg_url import redact, url_problem

    for flag, url in (("--storage", cfg.storage), ("--cluster", cfg.cluster)):
        if url.startswith(POSTGRES_SCHEMES) and (problem := url_problem(url)) is not None:
            problems.append(f"{flag} {redact(url)}: {problem}")
    if cfg.cluster and cfg.storage == "memory":
        problems.append(
            "--cluster keeps the group state in PostgreSQL; it cannot be combined with --storage memory"
        )
    if cfg.cluster_lease_ttl_ms < 1000:
        problems.append("--cluster-lease-ttl-ms must be at least 1000")
    if cfg.cluster_handover_per_tick < 1:
        problems.append("--cluster-handover-per-tick must be at least 1")
    if cfg.log_flush not in ("acks-all", "never"):
        problems.append("--log-flush must be acks-all or never")
    if cfg.log_format not in ("console", "json"):
        problems.append("--log-format must be console or json")
    if cfg.log_level.lower() not in ("debug", "info", "warning", "error"):
        problems.append("--log-level must be debug, info, warning or error")
    if cfg.group_min_session_timeout_ms > cfg.group_max_session_timeout_ms:
        problems.append("--group-min-session-timeout-ms exceeds --group-max-session-timeout-ms")
    problems.extend(cfg.share().problems())
    if cfg.group_max_size < 1:
        problems.append("--group-max-size must be at least 1")
    problems += _consumer_group_problems(cfg)
    if cfg.offsets_retention_minutes < 1:
        problems.append("--offsets-retention-minutes must be at least 1")
    if not 0 <= cfg.metrics_port <= 65535:
        problems.append("--metrics-port must be 0 (off) or a port number")
    for flag, value in (
        ("--connections-max-idle-ms", cfg.connections_max_idle_ms),
        ("--request-frame-timeout-ms", cfg.request_frame_timeout_ms),
        ("--max-connections-per-ip", cfg.max_connections_per_ip),
        ("--max-connections", cfg.max_connections),
    ):
        if value < 1:
            problems.append(f"{flag} must be at least 1")
    if cfg.num_partitions < 1:
        problems.append("--num-partitions must be at least 1")
    if cfg.sasl_server_max_receive_size < 1:
        problems.append("--sasl-server-max-receive-size must be at least 1")
    if cfg.connection_failed_authentication_delay_ms < 0:
        problems.append("--connection-failed-authentication-delay-ms must be 0 or more")
    if cfg.journal_lag_snapshot_interval_ms < 0:
        problems.append("--journal-lag-snapshot-interval-ms must be 0 (off) or positive")
    if cfg.journal_parquet not in ("auto", "on", "off"):
        problems.append("--journal-parquet must be auto, on or off")
    elif cfg.journal_parquet == "on" and not pyarrow_available():
        problems.append(
            "--journal-parquet on needs pyarrow, which is not installed (pip install 'groupcoord[columnar]', "
            "or use auto/off)"
        )
    if cfg.log_retention_check_interval_ms < 1 or cfg.log_cleaner_backoff_ms < 1:
        problems.append("--log-retention-check-interval-ms and --log-cleaner-backoff-ms must be at least 1")
    if cfg.log_cleaner_io_max_bytes_per_second <= 0:
        problems.append("--log-cleaner-io-max-bytes-per-second must be positive")
    if cfg.offsets_topic_num_partitions < 1:
        problems.append("--offsets-topic-num-partitions must be at least 1")
    for name, parts in cfg.topics:
        if parts < 1:
            problems.append(f"--topic {name}: give NAME:PARTITIONS with PARTITIONS >= 1")
    from groupcoord.server.configs.manager import check_static_broker_values, static_broker_values

    problems.extend(check_static_broker_values(static_broker_values(cfg)))
    if cfg.control_port is not None and not 0 <= cfg.control_port <= 65535:
        problems.append("--control-port must be 0-65535")
    if problems:
        raise SystemExit("groupcoord: " + "; ".join(problems))
