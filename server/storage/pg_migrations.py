"""The PostgreSQL schema, as numbered migrations applied in order (see `PostgresStateStore.open`).

One table per subject, so a new subject (transaction state, topic registry) is a new migration with its own
table, never a change to an old one. `schema_migrations` records what has been applied; `open()` applies the
rest inside one transaction holding an advisory lock, so several nodes starting at once apply each
migration exactly once. A database with a version newer than this package knows is refused.
"""

from __future__ import annotations

#: taken (transaction-scoped) while migrating; an arbitrary constant ("gc" + "mig")
MIGRATION_LOCK = 0x6763_6D69_67

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE groups (
            group_id TEXT PRIMARY KEY,
            shard    INTEGER NOT NULL,
            value    TEXT NOT NULL             -- JSON, bytes base64 (server/storage/sqlite.py encode_group)
        );
        CREATE INDEX groups_by_shard ON groups (shard);
        CREATE TABLE offsets (
            group_id         TEXT    NOT NULL,
            topic            TEXT    NOT NULL,
            partition        INTEGER NOT NULL,
            shard            INTEGER NOT NULL,
            committed_offset BIGINT  NOT NULL,
            leader_epoch     INTEGER NOT NULL,
            metadata         TEXT    NOT NULL,
            commit_timestamp BIGINT  NOT NULL,
            expire_timestamp BIGINT  NOT NULL,
            PRIMARY KEY (group_id, topic, partition)
        );
        CREATE INDEX offsets_by_shard ON offsets (shard);
        """,
    ),
    (
        2,
        """
        -- cluster mode (server/cluster/): who owns each shard, judged by the database clock
        CREATE TABLE shard_lease (
            shard      INTEGER PRIMARY KEY,
            owner      INTEGER,                -- node id; NULL: released
            epoch      BIGINT  NOT NULL DEFAULT 0,
            expires_at TIMESTAMPTZ NOT NULL DEFAULT '-infinity'
        );
        -- discovery: every node's advertised listener and when it last renewed
        CREATE TABLE nodes (
            node_id   INTEGER PRIMARY KEY,
            host      TEXT NOT NULL,
            port      INTEGER NOT NULL,
            last_seen TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    (
        3,
        """
        -- transactions (server/txn/): offsets committed inside a producer's transaction, visible on its
        -- COMMIT marker, dropped on ABORT (KIP-98/447); sharded like the group they belong to
        CREATE TABLE pending_offsets (
            group_id         TEXT    NOT NULL,
            producer_id      BIGINT  NOT NULL,
            topic            TEXT    NOT NULL,
            partition        INTEGER NOT NULL,
            shard            INTEGER NOT NULL,
            committed_offset BIGINT  NOT NULL,
            leader_epoch     INTEGER NOT NULL,
            metadata         TEXT    NOT NULL,
            commit_timestamp BIGINT  NOT NULL,
            PRIMARY KEY (group_id, producer_id, topic, partition)
        );
        CREATE INDEX pending_offsets_by_shard ON pending_offsets (shard);
        -- the transaction coordinator's state per transactional id (JSON, server/storage/sqlite.py encode_txn)
        CREATE TABLE transactions (
            transactional_id TEXT PRIMARY KEY,
            value            TEXT NOT NULL
        );
        """,
    ),
    (
        4,
        """
        -- KIP-848 consumer groups: Kafka's consumer-group records (types 3, 5-8) by (type, group, member id
        -- or ''), the value as JSON (server/coordinator/records.py); sharded like the group
        CREATE TABLE consumer_group_records (
            kind      SMALLINT NOT NULL,
            group_id  TEXT     NOT NULL,
            member_id TEXT     NOT NULL,
            shard     INTEGER  NOT NULL,
            value     TEXT     NOT NULL,
            PRIMARY KEY (kind, group_id, member_id)
        );
        CREATE INDEX consumer_group_records_by_shard ON consumer_group_records (shard);
        """,
    ),
    (
        5,
        """
        -- KIP-932 share groups and share-partition state (server/coordinator/modern/share, server/share):
        -- key and value as JSON (server/coordinator/records.py encode_share_record); single node only
        CREATE TABLE share_state (
            record_key TEXT PRIMARY KEY,
            value      TEXT NOT NULL
        );
        """,
    ),
    (
        6,
        """
        -- cluster mode's data plane (server/cluster/partitions.py, cluster_log.py): the topic registry,
        -- one leader per partition by lease (epoch bumped on every change of owner), and the records
        CREATE TABLE topics (
            name       TEXT PRIMARY KEY,
            topic_id   UUID NOT NULL UNIQUE,
            partitions INTEGER NOT NULL,
            configs    TEXT NOT NULL DEFAULT '[]',  -- JSON [[name, value], ...] given at creation
            collision_key TEXT NOT NULL UNIQUE        -- '.' as '_': Kafka refuses such twins
        );
        CREATE TABLE partition_lease (
            topic            TEXT    NOT NULL,
            partition        INTEGER NOT NULL,
            owner            INTEGER,               -- node id; NULL: released
            epoch            BIGINT  NOT NULL DEFAULT 0,   -- the partition's leader epoch
            expires_at       TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
            log_start_offset BIGINT  NOT NULL DEFAULT 0,   -- DeleteRecords
            PRIMARY KEY (topic, partition)
        );
        -- record batches exactly as the segment log stores them (baseOffset and partitionLeaderEpoch set)
        CREATE TABLE record_batches (
            topic       TEXT    NOT NULL,
            partition   INTEGER NOT NULL,
            base_offset BIGINT  NOT NULL,
            last_offset BIGINT  NOT NULL,
            batch       BYTEA   NOT NULL,
            PRIMARY KEY (topic, partition, base_offset)
        );
        -- non-transactional InitProducerId: ids unique over the cluster
        CREATE SEQUENCE producer_ids START 1000;
        """,
    ),
    (
        7,
        """
        -- cluster mode: every listener's advertised address, JSON [[name, host, port], ...]; host and port
        -- stay the inter-broker listener's (server/security/inter_broker.py). Metadata and FindCoordinator
        -- name each node's address on the listener the request came in on, as Kafka does
        ALTER TABLE nodes ADD COLUMN endpoints TEXT NOT NULL DEFAULT '[]';
        """,
    ),
    (
        8,
        """
        -- cluster mode's share groups (docs/cluster.md "Share groups"): share-group records carry their
        -- group's shard (loaded on the shard's takeover); share-partition state is kept per (topic id,
        -- partition, group) and written by the partition's leader, fenced by its lease; `generation` moves
        -- when the offsets admin APIs replace or delete a state, so a leader holding the old one cannot
        -- write it back (server/cluster/share_state.py)
        ALTER TABLE share_state ADD COLUMN shard INTEGER;
        CREATE INDEX share_state_by_shard ON share_state (shard);
        CREATE TABLE share_partition_state (
            topic_id   TEXT    NOT NULL,       -- hex
            partition  INTEGER NOT NULL,
            group_id   TEXT    NOT NULL,
            generation BIGINT  NOT NULL DEFAULT 0,
            value      TEXT,                   -- JSON (encode_share_record); NULL: deleted by an admin API
            PRIMARY KEY (topic_id, partition, group_id)
        );
        CREATE INDEX share_partition_state_by_group ON share_partition_state (group_id);
        """,
    ),
    (
        9,
        """
        -- cluster mode: ACL bindings and SCRAM credentials are the cluster's (server/security/cluster_store.py),
        -- as Kafka keeps them in its metadata log. Credentials as Kafka stores them: salted, never passwords
        CREATE TABLE acl_bindings (
            seq           BIGSERIAL NOT NULL,      -- creation order (DescribeAcls answers in it)
            resource_type INTEGER NOT NULL,
            resource_name TEXT    NOT NULL,
            pattern_type  INTEGER NOT NULL,
            principal     TEXT    NOT NULL,
            host          TEXT    NOT NULL,
            operation     INTEGER NOT NULL,
            permission    INTEGER NOT NULL,
            PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host, operation, permission)
        );
        CREATE TABLE scram_credentials (
            user_name  TEXT    NOT NULL,
            mechanism  TEXT    NOT NULL,          -- SCRAM-SHA-256 or SCRAM-SHA-512
            salt       BYTEA   NOT NULL,
            stored_key BYTEA   NOT NULL,
            server_key BYTEA   NOT NULL,
            iterations INTEGER NOT NULL,
            PRIMARY KEY (user_name, mechanism)
        );
        -- bumped by every change (its row lock orders the writers); nodes re-read when it moved
        CREATE TABLE security_version (
            id      INTEGER PRIMARY KEY CHECK (id = 1),
            version BIGINT  NOT NULL
        );
        INSERT INTO security_version VALUES (1, 0);
        """,
    ),
    (
        10,
        """
        -- cluster mode's group configs (GROUP config resources: `consumer.*`, `share.*`), the cluster's as in
        -- Kafka's metadata log: written by whichever node answers the IncrementalAlterConfigs, read by every
        -- node at start and at each lease tick (server/cluster/group_configs.py); a group without overrides
        -- has no row
        CREATE TABLE group_configs (
            group_id TEXT PRIMARY KEY,
            configs  TEXT NOT NULL             -- JSON object: config name -> value
        );
        """,
    ),
    (
        11,
        """
        -- cluster mode's client metrics subscriptions (CLIENT_METRICS config resources, KIP-714), the
        -- cluster's as in Kafka's metadata log, kept as group_configs is (server/cluster/group_configs.py)
        CREATE TABLE client_metrics_configs (
            name    TEXT PRIMARY KEY,
            configs TEXT NOT NULL              -- JSON object: config name -> value
        );
        """,
    ),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
