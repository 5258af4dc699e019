"""Per-partition durable log state, and completing an interrupted segment swap at start.

`log_state.json` holds the log start offset (moved by DeleteRecords and retention; Kafka keeps it in the
`log-start-offset-checkpoint` file) and the cleaner checkpoint (the first offset not yet compacted; Kafka's
`cleaner-offset-checkpoint`). It is replaced atomically (temp file, fsync, rename, directory fsync). Losing
the cleaner checkpoint only means cleaning again; the start offset is written before DeleteRecords answers.

Swaps follow Kafka's `LocalLog.replaceSegments`: the cleaner writes `<base>.cleaned`, fsyncs it and renames it
to `<base>.swap` (the commit point); the replaced segments are then renamed to `.deleted`, the swap file to
`<base>.log`, and the `.deleted` files removed. A crash anywhere leaves either the old segments (a `.cleaned`
file is just removed) or a `.swap` file whose replacement `recover_swaps` completes.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from groupcoord.server.log.batch import iter_valid
from groupcoord.server.log.segment import segment_name

log = logging.getLogger(__name__)

LOG_STATE = "log_state.json"
CLEANED, SWAP, DELETED = ".cleaned", ".swap", ".deleted"


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_log_state(directory: Path | None) -> tuple[int, int, bool]:
    """(log start offset, cleaner checkpoint, compacted: may have offset gaps); zeros when absent.

    An unreadable file counts as compacted, so recovery does not mistake gaps for corruption."""
    if directory is None:
        return 0, 0, False
    try:
        state = json.loads((directory / LOG_STATE).read_text())
        return int(state["log_start_offset"]), int(state["cleaner_offset"]), bool(state.get("gaps", True))
    except FileNotFoundError:
        return 0, 0, False
    except (ValueError, KeyError, TypeError) as e:
        log.warning("%s: ignoring unreadable %s: %s", directory, LOG_STATE, e)
        return 0, 0, True


def write_log_state(directory: Path, log_start_offset: int, cleaner_offset: int, gaps: bool) -> None:
    path = directory / LOG_STATE
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump({"log_start_offset": log_start_offset, "cleaner_offset": cleaner_offset, "gaps": gaps}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(directory)


def recover_swaps(directory: Path) -> None:
    """Finish or undo replacements a crash interrupted (before the segments are listed and opened)."""
    for f in directory.glob(f"*{CLEANED}"):
        f.unlink()
    for f in directory.glob(f"*{DELETED}"):
        f.unlink()
    for swap in sorted(directory.glob(f"*.log{SWAP}")):
        base = int(swap.name.split(".")[0])
        data = swap.read_bytes()
        end = base
        for h in iter_valid(data):
            end = h.next_offset
        # the segments it replaces: every segment starting in [base, end) (at least the one at `base`)
        for seg in directory.glob("*.log"):
            if seg.stem.isdigit() and (int(seg.stem) == base or base <= int(seg.stem) < end):
                seg.unlink()
                seg.with_suffix(".index").unlink(missing_ok=True)
        directory.joinpath(f"{segment_name(base)}.index").unlink(missing_ok=True)
        os.replace(swap, directory / f"{segment_name(base)}.log")
        log.warning("%s: completed an interrupted segment swap at offset %d", directory, base)
    fsync_dir(directory)
