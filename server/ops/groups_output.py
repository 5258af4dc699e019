"""`groupcoord groups` output: table text as kafka-consumer-groups.sh prints it, or the same rows as JSON/CSV,
and errors where the Java tool puts them (a module of its own so the views of both kinds of group share it)."""

from __future__ import annotations

import csv
import io
import json
import sys


class UsageError(Exception):
    pass


class Output:
    """Rows for json/csv, formatted text for table; errors go where kafka-consumer-groups.sh puts them."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.rows: list[dict] = []
        self.errors: list[str] = []

    def table(self, text: str) -> None:
        if self.mode == "table":
            print(text)

    def add(self, rows: list[dict]) -> None:
        self.rows.extend(rows)

    def error(self, msg: str) -> None:
        self.errors.append(msg)
        if self.mode == "table":
            print(f"\nError: {msg}")
        else:
            print(f"Error: {msg}", file=sys.stderr)

    def flush(self) -> None:
        if self.mode == "json":
            print(json.dumps(self.rows, indent=2))
        elif self.mode == "csv" and self.rows:
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=list(self.rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(self.rows)
            print(buf.getvalue(), end="")


def fmt(widths: list[int], values: list[object]) -> str:
    """printf("%-Ns %-Ms ... %s"): every column padded to its width but the ones past `widths`."""
    padded = [f"{v!s:<{widths[i]}}" if i < len(widths) else str(v) for i, v in enumerate(values)]
    return " ".join(padded).rstrip()
