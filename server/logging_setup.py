"""structlog set-up: console lines for people, JSON lines for machines (`--log-format`)."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

import structlog


class JsonLineFormatter(logging.Formatter):
    """Standard-library records (asyncio, third-party libraries, warnings) as JSON lines, so that with
    `--log-format json` every line on stderr parses, not only structlog's."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "event": record.getMessage(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "timestamp": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out)


def configure(fmt: str = "console", level: str = "info") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    if fmt == "json":
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLineFormatter())
        logging.basicConfig(level=lvl, handlers=[handler])
        logging.captureWarnings(True)
    else:
        logging.basicConfig(stream=sys.stderr, level=lvl, format="%(message)s")
    renderer: structlog.types.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
