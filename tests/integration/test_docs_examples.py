"""The docs' examples as a newcomer runs them (issue #36 item 5): the commands are read out of the Markdown
and run against a server started as `make run` starts it (no share or topic options), with only the
bootstrap address added (the docs use the default 127.0.0.1:9092; a test server has a port of its own)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections import Counter
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.owns_server, pytest.mark.timeout(240)]


def sh_blocks(doc: str, heading: str) -> list[list[str]]:
    """The commands (comments dropped) of the ```sh blocks in the section under `heading`."""
    text = (ROOT / "docs" / doc).read_text()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        for line in block.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                commands.append(shlex.split(line))
    return commands


async def test_the_share_work_queue_runs_as_docs_share_consumer_md_says(server_factory) -> None:  # type: ignore[no-untyped-def]
    """docs/share-consumer.md "A work queue you can run": under `make run` (share.auto.offset.reset left at
    Kafka's default, latest) the 20 jobs put first reach the worker. Before the fix it printed nothing: the
    group started at the log end, after the jobs."""
    commands = sh_blocks("share-consumer.md", "## A work queue you can run")
    assert commands[0] == ["make", "run"]  # the server: what server_factory() starts
    put, work = commands[1], commands[2]
    assert put[:3] == ["python", "docs/examples/work_queue.py", "put"] and work[2] == "work", commands
    jobs = int(put[put.index("--jobs") + 1])
    srv = server_factory()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    def argv(cmd: list[str]) -> list[str]:
        return [sys.executable, str(ROOT / cmd[1]), *cmd[2:], "--bootstrap", srv.bootstrap]

    p = await asyncio.create_subprocess_exec(*argv(put), env=env, cwd=ROOT)
    assert await asyncio.wait_for(p.wait(), 90) == 0
    w = await asyncio.create_subprocess_exec(*argv(work), env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE)
    lines: list[dict[str, Any]] = []

    async def read() -> None:
        assert w.stdout is not None
        async for raw in w.stdout:
            lines.append(json.loads(raw))

    reader = asyncio.create_task(read())
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while loop.time() < deadline and len({x["job"] for x in lines if x["outcome"] == "ACCEPT"}) < jobs:
            await asyncio.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            w.send_signal(signal.SIGINT)  # Ctrl-C, as the doc says
        code = await asyncio.wait_for(w.wait(), 60)
        await reader
    accepted = Counter(x["job"] for x in lines if x["outcome"] == "ACCEPT")
    assert set(accepted) == set(range(jobs)), lines
    assert code == 0


def python_block(doc: str, heading: str) -> str:
    text = (ROOT / "docs" / doc).read_text()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


def test_the_kip848_client_example_of_docs_consumer_groups_md_runs_as_written(
    server_factory, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """docs/consumer-groups.md "Try it": the confluent-kafka snippet (group.protocol=consumer) against a server
    started as `make run` starts it reads the 10 records it produced, and the doc's `groupcoord groups
    describe` then shows its committed offset with lag 0."""
    srv = server_factory()
    code = python_block("consumer-groups.md", "## Try it")
    assert code.count('"127.0.0.1:9092"') == 1  # the one address the test replaces
    script = tmp_path / "try_it.py"
    script.write_text(code.replace('"127.0.0.1:9092"', repr(srv.bootstrap)))
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert [ln.split()[3] for ln in lines[:10]] == [f"order-{i}" for i in range(10)]
    assert lines[10] == "assigned: [('orders', 0)]"
    (describe,) = sh_blocks("consumer-groups.md", "## Try it")
    assert describe[:3] == ["groupcoord", "groups", "describe"]
    args = [srv.bootstrap if a == "127.0.0.1:9092" else a for a in describe[1:]]
    shown = subprocess.run(
        [sys.executable, "-m", "groupcoord.server", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    rows = [ln.split() for ln in shown.stdout.splitlines() if ln.startswith("billing")]
    assert [r[:6] for r in rows] == [["billing", "orders", "0", "10", "10", "0"]], shown.stdout


def test_no_doc_cites_a_path_outside_the_repository() -> None:
    """The docs name files of this repository or public pages, never the development machine's own tree
    (docs/consumer-groups.md cited /work/shared/spec/..., which no reader has; /tmp in a command is fine)."""
    cited = [
        f"{p.relative_to(ROOT)}: {m}"
        for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for m in re.findall(r"(?<![\w.:/])/work/\S+", p.read_text())
    ]
    assert cited == []
