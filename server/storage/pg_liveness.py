"""PostgreSQL session settings that end a silent client's transaction before its cluster lease can expire.

Why (issue 36): every fenced write of cluster mode locks its lease rows (`FOR SHARE`) in a transaction of
several round trips (storage/postgres.py `_commit`, cluster/share_state.py, cluster/cluster_log.py), and the
other nodes take expired leases with `FOR UPDATE SKIP LOCKED`, which skips a row such a transaction still
locks. A node paused (SIGSTOP) or cut from PostgreSQL in the middle of one left the transaction open — and
its shards and partitions unowned — until PostgreSQL noticed: never while paused, two hours (the OS keepalive
default) for a dead peer. PostgreSQL ends it itself with these settings, sent in the startup packet of every
cluster-mode session (each is a per-session setting a plain user may set):

* `idle_in_transaction_session_timeout` = half the lease TTL: a transaction whose client sends nothing
  for that long is rolled back and its session closed, whether the client is paused, cut off or dead. The
  lock is then gone before the lease it fenced can expire (a lease expires at least a TTL less a tick after
  the owner's last renewal, and the owner's transaction went silent no earlier than that), so a takeover
  still happens within the TTL plus a tick. Safety is unchanged: the write rolled back, the deposed owner
  gets an error, never an acknowledgement, and anything it sends later finds its session gone.
* `tcp_keepalives_idle/interval/count` and `tcp_user_timeout`: PostgreSQL's side of a connection to a dead or
  unreachable peer is closed within about the TTL instead of the OS defaults' two hours, so whatever that
  session holds outside a transaction (a node id's advisory lock, a LISTEN) is freed as well.

A healthy client is never idle inside a transaction for anything like half a TTL (its statements follow one
another at once); on a machine so loaded that one is, the write fails with a storage error the client
retries, the same answer the lease's own self-fencing gives at that point.
"""

from __future__ import annotations


def session_settings(lease_ttl_ms: int, application_name: str = "groupcoord") -> dict[str, str]:
    """asyncpg `server_settings` for a cluster-mode session whose leases last `lease_ttl_ms`."""
    half = max(200, lease_ttl_ms // 2)
    keepalive_s = max(1, lease_ttl_ms // 5000)  # seconds, PostgreSQL's unit: dead peer seen in ~3 of them
    return {
        "application_name": application_name,
        "idle_in_transaction_session_timeout": str(half),
        "tcp_keepalives_idle": str(keepalive_s),
        "tcp_keepalives_interval": str(keepalive_s),
        "tcp_keepalives_count": "3",
        "tcp_user_timeout": str(half),
    }
