"""`groupcoord report` / `python -m groupcoord.pipeline`: arguments, the Java check, and turning failures into messages.

The lead's `groupcoord` CLI calls `add_report_arguments` and `run_report`; `pipeline/__main__.py` uses the
same two functions, so spark-submit of the module and the installed command behave identically.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_NO_JAVA = 2
EXIT_MISSING_EXTRA = 3

#: what `groupcoord report` imports beyond the server's own dependencies (the `report` extra)
REPORT_MODULES = ("pyspark", "matplotlib")
INSTALL_HINT = "pip install 'groupcoord[report]'"
#: the server image (Dockerfile) leaves the report out: it would add PySpark and a JRE to every coordinator
CONTAINER_HINT = (
    "In the groupcoord container image: copy the data directory out and run the report where Java 17 and the "
    "extra are installed:\n  docker cp <container>:/data ./data && groupcoord report --data-dir ./data --out ./report"
)


def missing_report_modules() -> list[str]:
    """The report's Python dependencies that cannot be imported here (the server installs without them)."""
    missing = []
    for name in REPORT_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def parse_time(text: str) -> int:
    """`--since/--until`: epoch milliseconds, or an ISO-8601 date/time (no zone means UTC)."""
    s = text.strip()
    if s.lstrip("-").isdigit():
        return int(s)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: use epoch milliseconds or ISO-8601, e.g. 2026-11-22T10:00:00Z"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `report` options to `parser` (a subcommand parser or a standalone one)."""
    parser.add_argument(
        "--data-dir",
        required=True,
        help="the coordinator's data dir (reads <data-dir>/journal/*.parquet and *.jsonl); a URI (hdfs://...) on a cluster",
    )
    parser.add_argument(
        "--out", required=True, type=Path, help="output dir: tables/, summary.json, report.html, *.png"
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default local[*]; under spark-submit, the master spark-submit was given)",
    )
    parser.add_argument(
        "--since", type=parse_time, default=None, help="only events with ts >= T (epoch ms or ISO-8601)"
    )
    parser.add_argument(
        "--until", type=parse_time, default=None, help="only events with ts < T (epoch ms or ISO-8601)"
    )
    parser.add_argument(
        "--shuffle-partitions",
        type=int,
        default=None,
        help="spark.sql.shuffle.partitions (default: 2 x local cores, >= 8)",
    )
    parser.add_argument("--driver-memory", default="4g", help="local mode only: driver JVM heap (default 4g)")
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        default=None,
        help="incremental runs: parse only journal files new or grown since the last run with this dir, "
        "keeping the parsed events there as Parquet (docs/report.md)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _under_spark_submit() -> bool:
    """spark-submit starts Python with a gateway to its JVM; the master is then spark-submit's to choose."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def run_report(args: argparse.Namespace) -> int:
    """Run the report for parsed `args`; returns the process exit code (0 ok, 1 failed, 2 no Java,
    3 the `report` extra is not installed)."""
    missing = missing_report_modules()
    if missing:
        print(
            f"groupcoord report: needs {' and '.join(missing)}, which the server does not install; "
            f"install the report extra: {INSTALL_HINT}",
            file=sys.stderr,
        )
        print(CONTAINER_HINT, file=sys.stderr)
        return EXIT_MISSING_EXTRA
    from groupcoord.pipeline.journal import journal_files, journal_glob  # pyspark imports only; fast

    if args.since is not None and args.until is not None and args.since >= args.until:
        print("groupcoord report: --since must be before --until", file=sys.stderr)
        return EXIT_FAILED
    if not journal_files(args.data_dir):
        print(
            f"groupcoord report: no journal in {args.data_dir}: expected {journal_glob(args.data_dir)} "
            "(the coordinator writes it; check --data-dir)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    master = args.master or (None if _under_spark_submit() else "local[*]")
    if not _under_spark_submit():
        from groupcoord.pipeline.spark import java_problem

        problem = java_problem()
        if problem:
            print(f"groupcoord report: {problem}", file=sys.stderr)
            return EXIT_NO_JAVA

    from groupcoord.pipeline.job import clear_outputs, run_job
    from groupcoord.pipeline.progress import Progress
    from groupcoord.pipeline.spark import build_session

    quiet = bool(args.quiet)
    if not quiet:
        print(f"[report] starting Spark ({master or 'from spark-submit'}) ...", file=sys.stderr, flush=True)
    spark = None
    try:
        spark = build_session(
            master, shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory
        )
        clear_outputs(Path(args.out))
        with Progress(spark.sparkContext, enabled=not quiet) as progress:
            result = run_job(
                spark,
                args.data_dir,
                args.out,
                args.since,
                args.until,
                progress,
                checkpoint_dir=args.checkpoint_dir,
            )
    except KeyboardInterrupt:
        print("groupcoord report: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # Spark errors arrive as long Java traces; one line says more
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"groupcoord report: failed: {type(e).__name__}: {first}", file=sys.stderr)
        if os.environ.get("GROUPCOORD_DEBUG"):
            raise
        print("(set GROUPCOORD_DEBUG=1 for the full traceback)", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if spark is not None:
            spark.stop()
    t = result.summary["totals"]
    print(
        f"{result.events:,} events, {result.summary['groups']:,} groups, {t['rebalances']:,} rebalances "
        f"(p50 {t['rebalance_p50_ms']} ms, p99 {t['rebalance_p99_ms']} ms) in {result.seconds:.1f}s\n"
        f"report: {Path(args.out) / 'report.html'}\nsummary: {Path(args.out) / 'summary.json'}\n"
        f"tables: {Path(args.out) / 'tables'}"
    )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m groupcoord.pipeline",
        description="Rebalance report from the coordinator's journal (PySpark).",
    )
    add_report_arguments(parser)
    return run_report(parser.parse_args(argv))
