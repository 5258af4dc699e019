"""`groupcoord journal roll|cat`: the event journal's segments by hand (docs/journal.md).

`roll` converts the closed JSONL files of a stopped server into Parquet segments (what a running server does
by itself); `cat` prints the events of Parquet and JSONL segments as JSON lines, so `jq` works on both.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from groupcoord.server.journal.roll import pyarrow_available, read_segment, roll_closed, segment_order


def add_journal_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    roll = sub.add_parser(
        "roll",
        help="roll the closed JSONL journal files of a stopped server into Parquet segments",
        description="Convert every <data-dir>/journal/*.jsonl into its Parquet twin and delete the JSONL. "
        "Run it on a stopped server's data dir only: a running server rolls its own files.",
    )
    roll.add_argument("--data-dir", type=Path, required=True)
    cat = sub.add_parser(
        "cat",
        help="print journal events (Parquet and JSONL segments) as JSON lines, in file order",
        description="Print every event of the given segment files, or of all segments under "
        "<data-dir>/journal (a JSONL file whose Parquet twin exists is skipped), one JSON object per line.",
    )
    cat.add_argument("--data-dir", type=Path, default=None)
    cat.add_argument("files", nargs="*", type=Path, metavar="FILE")


def run_journal(args: argparse.Namespace) -> int:
    if args.journal_command == "roll":
        return _roll(args.data_dir)
    return _cat(args.data_dir, args.files)


def _roll(data_dir: Path) -> int:
    if not pyarrow_available():
        print("groupcoord journal roll: needs pyarrow (pip install 'groupcoord[columnar]')", file=sys.stderr)
        return 1
    results = roll_closed(data_dir / "journal")
    for r in results:
        skipped = f", {r.skipped} undecodable line(s) skipped" if r.skipped else ""
        print(f"rolled {Path(r.source).name} -> {Path(r.target).name}: {r.events} events{skipped}")
    if not results:
        print(f"nothing to roll in {data_dir / 'journal'}")
    return 0


def segments(directory: Path) -> list[Path]:
    """Every segment in write order; a JSONL whose Parquet twin exists is left out (same events)."""
    if not directory.is_dir():
        return []
    found = [
        p
        for p in (*directory.glob("*.parquet"), *directory.glob("*.jsonl"))
        if p.suffix == ".parquet" or not p.with_suffix(".parquet").exists()
    ]
    return sorted(found, key=segment_order)


def _cat(data_dir: Path | None, files: list[Path]) -> int:
    if not files:
        if data_dir is None:
            print("groupcoord journal cat: give --data-dir or segment files", file=sys.stderr)
            return 2
        files = segments(data_dir / "journal")
    if any(f.suffix == ".parquet" for f in files) and not pyarrow_available():
        print("groupcoord journal cat: Parquet segments need pyarrow", file=sys.stderr)
        return 1
    out = sys.stdout
    try:
        for f in files:
            for event in read_segment(f):
                out.write(json.dumps(event, separators=(",", ":")) + "\n")
        out.flush()
    except BrokenPipeError:  # `| head`
        return 0
    return 0
