"""The transaction coordinator service over a real store and log: a transaction a crash left in
PrepareCommit is completed at start (markers re-written, the group's pending offsets made committed)."""

from __future__ import annotations

from pathlib import Path

from groupcoord.server.coordinator.records import TxnRecord, TxnValue
from groupcoord.server.log import LogManager
from groupcoord.server.storage.sqlite import SqliteStateStore
from groupcoord.server.txn.service import TxnCoordinator
from groupcoord.server.txn.state import COMPLETE_COMMIT, PREPARE_COMMIT
from tests.log.log_helpers import make_batch


async def test_prepare_commit_found_at_start_writes_markers_and_completes(tmp_path: Path) -> None:
    logs = LogManager(tmp_path)
    await logs.open()
    await logs.create_topic("t", 1)
    await logs.append("t", 0, make_batch(2, pid=7, epoch=3, seq=0, transactional=True), -1)
    store = SqliteStateStore(tmp_path / "state.db")
    await store.open()
    prepared = TxnValue(7, 3, -1, -1, 60_000, PREPARE_COMMIT, (("t", 0),), ("g",), 1, 2)
    await store.write([TxnRecord("app", prepared)])  # as left by a crash between Prepare and the markers
    await store.close()

    store = SqliteStateStore(tmp_path / "state.db")
    await store.open()
    completed: list[tuple[str, int, bool]] = []

    async def complete_group(group: str, pid: int, commit: bool) -> bool:
        completed.append((group, pid, commit))
        return True

    async def allocate() -> int:
        return 1000

    txn = TxnCoordinator(store, logs, complete_group, allocate, lambda: 10, cleanup_interval_ms=60_000)
    for rec in await store.load():
        if isinstance(rec, TxnRecord):
            txn.replay(rec)
    assert logs.read("t", 0, 0, 1 << 20, read_committed=True).last_stable_offset == 0
    await txn.abort_timed_out()  # the periodic pass; start() runs the same completion first
    assert completed == [("g", 7, True)]
    r = logs.read("t", 0, 0, 1 << 20, read_committed=True)
    assert r.last_stable_offset == 3 and r.aborted == ()
    assert txn.describe("app").state == COMPLETE_COMMIT
    assert [r.value.state for r in await store.load() if isinstance(r, TxnRecord)] == [COMPLETE_COMMIT]
    await txn.close()
    await store.close()
    await logs.close()
