"""Comparing report outputs: Parquet tables as multisets of canonical rows, summaries without their clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def table_rows(spark: Any, path: Path) -> list[str]:
    """Every row as canonical JSON (maps as sorted entries), sorted: a table compared as a multiset."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    df = spark.read.parquet(str(path))
    cols = [
        F.array_sort(F.map_entries(f.name)).alias(f.name)
        if isinstance(f.dataType, MapType)
        else F.col(f.name)
        for f in df.schema.fields
    ]
    return sorted(r[0] for r in df.select(F.to_json(F.struct(*cols))).collect())


def summary(out: Path) -> dict[str, Any]:
    """summary.json without `generated_at` (the only field that depends on when the run happened)."""
    s = json.loads((out / "summary.json").read_text())
    s.pop("generated_at")
    return s
