"""Progress lines on stderr for long runs.

A 10M-event journal takes about a minute on a laptop and much longer on a big cluster backlog; silence for
that long looks like a hang. Spark's own console progress bar is turned off (it redraws one line with `\\r`,
which is unreadable in logs), so this prints a step line when the job moves on, and every few seconds the
running stage's task counts from the status tracker.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from pyspark import SparkContext


class Progress:
    """`step(msg)` announces a phase; a daemon thread reports Spark task progress while it runs."""

    def __init__(
        self, sc: SparkContext | None, enabled: bool = True, interval: float = 5.0, out: TextIO | None = None
    ) -> None:
        self.sc = sc
        self.enabled = enabled
        self.interval = interval
        self.out = out or sys.stderr
        self.t0 = time.monotonic()
        self.phase = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _print(self, msg: str) -> None:
        if self.enabled:
            print(f"[report {time.monotonic() - self.t0:6.1f}s] {msg}", file=self.out, flush=True)

    def step(self, msg: str) -> None:
        self.phase = msg
        self._print(msg)

    def __enter__(self) -> Progress:
        if self.enabled and self.sc is not None:
            self._thread = threading.Thread(target=self._poll, name="report-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _poll(self) -> None:
        last = ""
        while not self._stop.wait(self.interval):
            try:
                tracker = self.sc.statusTracker()
                parts = []
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
            except Exception:  # the context is stopping; progress is best effort
                return
            line = ", ".join(parts)
            if line and line != last:
                self._print(f"  {self.phase.rstrip('.…')} - {line}")
                last = line
