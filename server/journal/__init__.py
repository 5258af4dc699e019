"""The group event journal (docs/journal.md): the JSON-lines writer (`writer.py`), the roll of closed files
into Parquet segments in a worker process (`roll.py`), `groupcoord journal roll/cat` (`cli.py`) and the
periodic lag snapshots written into it (`lag_snapshots.py`)."""
