"""`python -m groupcoord.pipeline.bench --data-dir D`: time the report job on a journal and print events/minute.

The session is started before the clock starts (JVM start-up is not throughput), then the full job runs
(tables, summary.json, plots, report.html), as `groupcoord report` would. Goal: >= 10M events/min on a
2-core machine with local Spark (`make bench-report`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

GOAL_PER_MIN = 10_000_000


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", required=True, type=Path)
    p.add_argument("--out", type=Path, default=None, help="report output dir (default: a temporary dir)")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--shuffle-partitions", type=int, default=None)
    p.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        help="incremental: stage the journal into this dir first (timed apart), then time the report "
        "from the staged Parquet, as a scheduled run with nothing new to parse",
    )
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)

    from groupcoord.pipeline.spark import build_session, java_problem

    problem = java_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from groupcoord.pipeline.job import clear_outputs, run_job
    from groupcoord.pipeline.progress import Progress

    spark = build_session(
        args.master, shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory
    )
    try:
        with tempfile.TemporaryDirectory(prefix="groupcoord-bench-report-") as tmp:
            out = args.out or Path(tmp)
            clear_outputs(out)
            if args.checkpoint_dir is not None:
                t0 = time.perf_counter()
                with Progress(spark.sparkContext, enabled=not args.quiet) as progress:
                    staged = run_job(
                        spark, args.data_dir, out, progress=progress, checkpoint_dir=args.checkpoint_dir
                    )
                secs = time.perf_counter() - t0
                print(
                    f"staging run: parsed {staged.parsed_files} file(s), {staged.events:,} events in {secs:.1f}s"
                )
            t0 = time.perf_counter()
            with Progress(spark.sparkContext, enabled=not args.quiet) as progress:
                result = run_job(
                    spark, args.data_dir, out, progress=progress, checkpoint_dir=args.checkpoint_dir
                )
            secs = time.perf_counter() - t0
    finally:
        spark.stop()
    rate = result.events / secs * 60
    verdict = "meets" if rate >= GOAL_PER_MIN else "below"
    print(
        f"events: {result.events:,} (journal files parsed from JSON in the timed run: {result.parsed_files})"
    )
    print(f"seconds: {secs:.1f}")
    print(f"events/min: {rate:,.0f} ({verdict} the {GOAL_PER_MIN:,}/min goal)")
    print(f"rebalances: {result.summary['totals']['rebalances']:,}  groups: {result.summary['groups']:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
