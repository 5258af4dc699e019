"""The oracle suite's summary (also `make oracle-report`): each scenario family with "same as Kafka", the
named differences it carries (docs/differences.md), or what failed or was skipped."""

from __future__ import annotations

from typing import Any

import pytest

# test-id prefix (file::function) -> family
FAMILIES = {
    "test_fixture.py": "fixture: Kafka 4.4 KRaft broker and groupcoord serve groups, created topics listed",
    "test_classic.py": "classic join/sync/heartbeat/leave, every error path, static membership, SkipAssignment, v0-v5",
    "test_consumer.py": "KIP-848 heartbeats: epochs, fenced/unknown members, invalid requests, static members",
    "test_regex.py": "KIP-848 regex subscriptions, __consumer_offsets included",
    "test_offsets_admin.py::test_offsets_admin_same_as_kafka[offsets]": "offsets commit/fetch/delete over versions and errors",
    "test_offsets_admin.py::test_offsets_admin_same_as_kafka[admin_listing]": "ListGroups filters, Describe/Delete groups of every type, share heartbeat",
    "test_offsets_admin.py::test_offsets_admin_same_as_kafka[api_versions]": "ApiVersions (group APIs' ranges)",
    "test_txn.py": "transactional offsets: InitProducerId, AddOffsetsToTxn, TxnOffsetCommit, require_stable, EndTxn",
    "test_migration.py": "online migration classic -> consumer -> classic (types, states, classic heartbeats)",
    "test_share_fetch.py": "share fetch/acknowledge: locks, ACCEPT/RELEASE/REJECT, redelivery counts, session errors",
    "test_fuzz.py": "differential fuzzer: KIP-848 request sequences, three members",
}
NAMED = {
    "test_consumer.py": ["KIP-848/share groups start at epoch 0, Kafka 4.4 at 1 (all epochs one lower)"],
    "test_regex.py": ["a new regex resolves in the joining heartbeat (Kafka: asynchronously)"],
    "test_offsets_admin.py::test_offsets_admin_same_as_kafka[admin_listing]": [
        "share partitions assigned at once (Kafka: after the share coordinator initialises them)"
    ],
    "test_offsets_admin.py::test_offsets_admin_same_as_kafka[api_versions]": [
        "OffsetCommit/OffsetFetch minimum versions, TxnOffsetCommit maximum (issue 37)"
    ],
    "test_share_fetch.py": [
        "a record near the delivery limit acquired alone from its 4th delivery (Kafka: 5th)"
    ],
    "test_classic.py": ["empty SyncGroup assignments sent encoded (differences.md 1)"],
    "test_fuzz.py": ["tied server assignors broken by name (Kafka: hash-table order)"],
}


def _family(nodeid: str) -> str | None:
    rel = nodeid.split("tests/oracle/", 1)[-1]
    best = max((k for k in FAMILIES if rel.startswith(k)), key=len, default=None)
    return best


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    outcomes: dict[str, list[str]] = {}
    for key in ("passed", "failed", "skipped", "error"):
        for rep in terminalreporter.stats.get(key, []):
            nodeid = getattr(rep, "nodeid", "")
            if "tests/oracle/" not in nodeid or getattr(rep, "when", "call") not in ("call", "setup"):
                continue
            if key == "passed" and rep.when != "call":
                continue
            fam = _family(nodeid)
            if fam is not None:
                outcomes.setdefault(fam, []).append(key)
    if not outcomes:
        return
    terminalreporter.section("groupcoord vs Apache Kafka 4.4.0")
    for fam, text in FAMILIES.items():
        got = outcomes.get(fam)
        if not got:
            continue
        if all(k == "passed" for k in got):
            verdict = "same as Kafka" + (" (named: " + "; ".join(NAMED[fam]) + ")" if fam in NAMED else "")
        elif "failed" in got or "error" in got:
            verdict = "DIFFERS (see the failures above)"
        else:
            verdict = "skipped (no Java/Maven/jars: see the skip reasons)"
        terminalreporter.write_line(f"{text}: {verdict}")
