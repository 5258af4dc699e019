"""Durable configs: `<data-dir>/configs.json`, replaced atomically (temp file, fsync, rename, fsync the
directory) on every change. See docs/storage.md.

Topic overrides are keyed by name and carry the topic id they were set for, so a topic deleted and created
again under the same name never inherits the old topic's settings; entries for ids that no longer exist are
dropped when the server starts.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

FORMAT_VERSION = 1


@dataclass
class StoredConfigs:
    #: dynamic broker configs for every broker (AlterConfigs on BROKER "")
    cluster_default: dict[str, str] = field(default_factory=dict)
    #: dynamic broker configs for this node (AlterConfigs on BROKER "<node id>")
    node: dict[str, str] = field(default_factory=dict)
    #: topic name -> (topic id as text, overrides)
    topics: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    #: group id -> its group configs (IncrementalAlterConfigs on GROUP resources; server/configs/group_defs.py)
    groups: dict[str, dict[str, str]] = field(default_factory=dict)
    #: subscription name -> its client metrics configs (CLIENT_METRICS resources, KIP-714;
    #: server/configs/client_metrics_defs.py)
    client_metrics: dict[str, dict[str, str]] = field(default_factory=dict)


def load(path: Path | None) -> StoredConfigs:
    if path is None or not path.exists():
        return StoredConfigs()
    raw = json.loads(path.read_text())
    broker = raw.get("broker", {})
    return StoredConfigs(
        cluster_default={str(k): str(v) for k, v in broker.get("default", {}).items()},
        node={str(k): str(v) for k, v in broker.get("node", {}).items()},
        topics={
            str(name): (str(t["id"]), {str(k): str(v) for k, v in t.get("configs", {}).items()})
            for name, t in raw.get("topics", {}).items()
        },
        groups={str(g): {str(k): str(v) for k, v in cfg.items()} for g, cfg in raw.get("groups", {}).items()},
        client_metrics={
            str(n): {str(k): str(v) for k, v in cfg.items()}
            for n, cfg in raw.get("client_metrics", {}).items()
        },
    )


def save(path: Path, state: StoredConfigs) -> None:
    doc: dict[str, object] = {
        "version": FORMAT_VERSION,
        "broker": {"default": state.cluster_default, "node": state.node},
        "topics": {name: {"id": tid, "configs": cfg} for name, (tid, cfg) in state.topics.items()},
    }
    if state.groups:  # absent when empty: older versions read the file unchanged
        doc["groups"] = state.groups
    if state.client_metrics:  # likewise
        doc["client_metrics"] = state.client_metrics
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
