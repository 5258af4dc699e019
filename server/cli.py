"""`groupcoord`: serve the coordinator, or turn its journal into a report."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from groupcoord.server.config import POSTGRES_SCHEMES, add_serve_arguments, config_from_args
from groupcoord.server.storage.base import StorageError
from groupcoord.server.storage.postgres import redact

DESCRIPTION = """\
groupcoord is a Kafka-protocol consumer-group coordinator. Point Kafka clients' bootstrap servers at it:
they find it as their group coordinator, join groups, get partitions from their own assignors, commit
offsets, and rebalance as they would against Apache Kafka.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = sub.add_parser(
        "serve",
        help="run the coordinator",
        description="Run the coordinator. Every option can also be set with the GROUPCOORD_* variable shown.",
    )
    add_serve_arguments(serve)
    report = sub.add_parser(
        "report", help="turn the event journal into rebalance tables and an HTML report (PySpark)"
    )
    try:
        from groupcoord.pipeline.cli import add_report_arguments
    except ImportError:
        add_report_arguments = None
    if add_report_arguments is not None:
        add_report_arguments(report)
    from groupcoord.server.ops.groups_cli import add_groups_arguments, run_groups

    groups = sub.add_parser(
        "groups",
        help="list, describe, reset offsets of and delete consumer groups (kafka-consumer-groups.sh)",
        description="kafka-consumer-groups.sh's actions against any Kafka-protocol broker. Exit codes: 0 done, "
        "1 error, 2 usage.",
    )
    add_groups_arguments(groups)
    from groupcoord.server.ops.share_groups_cli import add_share_groups_arguments, run_share_groups

    share_groups = sub.add_parser(
        "share-groups",
        help="list, describe, reset offsets of and delete share groups (kafka-share-groups.sh)",
        description="kafka-share-groups.sh's actions (KIP-932) against any Kafka-protocol broker. Exit codes: "
        "0 done, 1 error, 2 usage.",
    )
    add_share_groups_arguments(share_groups)
    probe = sub.add_parser(
        "probe",
        help="exit 0 when the local server is ready: state loaded (/ready) and ApiVersions answered",
        description="The container HEALTHCHECK. Reads GROUPCOORD_LISTENERS (or GROUPCOORD_PORT) and GROUPCOORD_METRICS_PORT.",
    )
    from groupcoord.server.ops.probe import add_probe_arguments, run_probe

    add_probe_arguments(probe)
    journal = sub.add_parser(
        "journal",
        help="roll the event journal into Parquet segments, or print its events as JSON lines",
        description="The group event journal's segments (docs/journal.md).",
    )
    from groupcoord.server.journal.cli import add_journal_arguments, run_journal

    add_journal_arguments(journal)
    args = parser.parse_args(argv)
    if args.command == "probe":
        return run_probe(args)
    if args.command == "journal":
        return run_journal(args)
    if args.command == "groups":
        return run_groups(args)
    if args.command == "share-groups":
        return run_share_groups(args)
    if args.command == "serve":
        return serve_main(args)
    if args.command == "report":
        from groupcoord.pipeline.cli import run_report

        return run_report(args)
    parser.print_help()
    return 2


def serve_main(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    from groupcoord.server.security import check_settings

    problems = check_settings(config, config.listener_list())
    if problems:
        raise SystemExit("groupcoord: " + "; ".join(problems))
    from groupcoord.server.logging_setup import configure

    configure(config.log_format, config.log_level)
    try:
        import uvloop
    except ImportError:
        uvloop = None
    runner = uvloop.run if uvloop is not None else asyncio.run
    return runner(_serve(config))


async def _serve(config) -> int:  # type: ignore[no-untyped-def]
    import structlog

    from groupcoord.server.broker import Broker

    log = structlog.get_logger("groupcoord.server")
    broker = Broker(config)
    # In JSON mode every line on stderr is a JSON object (log collectors parse each one); the plain lines
    # below are for people at a terminal, and the structured events carry the same facts.
    plain = config.log_format != "json"
    try:
        await broker.start()
    except OSError as exc:
        where = config.listeners or f"{config.host}:{config.port}"
        log.error("cannot listen", listeners=where, error=exc.strerror)
        if plain:
            print(f"groupcoord: cannot listen on {where}: {exc.strerror}", file=sys.stderr)
        return 1
    except StorageError as exc:
        print(f"groupcoord: cannot open the state store: {exc}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    where = "memory (not durable)" if config.storage == "memory" else str(config.data_dir.resolve())
    if config.storage.startswith(POSTGRES_SCHEMES):
        where += f" + {redact(config.storage)}"
    for listener in broker.listeners:
        if plain:
            print(
                f"groupcoord listening on {listener.name} {listener.host or '*'}:{broker.bound_port(listener.name)} "
                f"({listener.protocol}, node {config.node_id}, advertised as "
                f"{listener.advertised_host}:{listener.advertised_port}); data in {where}",
                file=sys.stderr,
                flush=True,
            )
        log.info(
            "started",
            listener=listener.name,
            protocol=listener.protocol,
            host=listener.host,
            port=broker.bound_port(listener.name),
            advertised=f"{listener.advertised_host}:{listener.advertised_port}",
            data_dir=where,
        )
    try:
        await broker.loaded  # type: ignore[misc]
    except Exception as exc:
        log.exception("loading the coordinator state failed")
        if plain:
            print(f"groupcoord: cannot load the state in {where}: {exc}", file=sys.stderr)
        await broker.stop()
        return 1
    await stop.wait()
    log.info("stopping")
    await broker.stop()
    log.info("stopped")
    if plain:
        print("groupcoord stopped", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
