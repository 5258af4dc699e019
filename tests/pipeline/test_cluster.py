"""The same report job on a real Spark standalone cluster (`spark-submit --master spark://…`) as locally.

A master and one worker are started from the installed pyspark on loopback; the job is submitted the way an
operator would submit it to an existing cluster (docs/report.md), and its Parquet tables and summary must
equal those of a `local[2]` run over the same journal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import groupcoord.pipeline
from groupcoord.pipeline.job import run_job
from tests.pipeline.compare import summary, table_rows
from tests.pipeline.standalone import SPARK_HOME, StandaloneCluster

# a local Spark job, a standalone master and worker, and a spark-submit'ed job with its own JVMs: on a
# loaded 2-core machine that took 300 s (80 s when only the suite ran), past the suite's default timeout
pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
TABLES = ("rebalances", "member_sessions", "group_summary")


@pytest.fixture
def cluster(tmp_path: Path, spark: Any) -> Iterator[StandaloneCluster]:
    """`spark` first: skips when Java is missing, like every Spark test."""
    c = StandaloneCluster(tmp_path / "cluster").start()
    try:
        yield c
    finally:
        c.stop()


def _journal(data_dir: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "journal_gen.py"),
            "--out",
            str(data_dir),
            "--events",
            "8000",
            "--groups",
            "20",
            "--workers",
            "1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"
    )
    return env


def test_report_on_a_standalone_cluster_matches_the_local_run(
    cluster: StandaloneCluster, spark: Any, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    _journal(data_dir)
    local_out, cluster_out = tmp_path / "local", tmp_path / "cluster-out"

    # the local run in the suite's shared local[2] session (2 shuffle partitions, no adaptive planning):
    # a different plan shape than the cluster's, so equal outputs also say the result does not depend on it
    run_job(spark, data_dir, local_out)

    main_py = Path(groupcoord.pipeline.__file__).with_name("__main__.py")
    submitted = subprocess.run(
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            cluster.url,
            "--driver-memory",
            "1g",
            "--executor-memory",
            "512m",
            "--total-executor-cores",
            "1",
            "--conf",
            "spark.ui.enabled=false",
            str(main_py),
            "--data-dir",
            str(data_dir),
            "--quiet",
            "--out",
            str(cluster_out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
    )
    assert submitted.returncode == 0, submitted.stderr[-4000:] + cluster.log("worker")
    # the work really ran on the cluster's executor, not in the driver
    assert any((cluster.work_dir / "work").glob("app-*/*/stderr")), "no executor ran on the worker"

    s_local, s_cluster = summary(local_out), summary(cluster_out)
    assert s_local["total_events"] > 7000 and s_local["totals"]["rebalances"] > 0
    assert s_cluster == s_local
    for t in TABLES:
        rows = table_rows(spark, local_out / "tables" / t)
        assert rows, t
        assert table_rows(spark, cluster_out / "tables" / t) == rows, t
    assert (cluster_out / "report.html").exists()
