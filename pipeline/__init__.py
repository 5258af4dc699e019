"""Rebalance analytics: the coordinator journal -> Parquet tables, summary.json and report.html (PySpark)."""
