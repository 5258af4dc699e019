"""The options `groupcoord groups` and `groupcoord share-groups` share, and how their usage shows them.

`--bootstrap-server` is accepted before and after the action (`groups --bootstrap-server X list` or
`groups list --bootstrap-server X`, as scripts written for either habit do), so argparse cannot require it
where it is declared; the run functions check it (exit 2). `RequiredBootstrap` makes the usage line say it is
required all the same: without the brackets argparse puts around every optional flag.
"""

from __future__ import annotations

import argparse

BOOTSTRAP = "--bootstrap-server"
METAVAR = "HOST:PORT"


class RequiredBootstrap(argparse.HelpFormatter):
    """Usage shows `--bootstrap-server HOST:PORT`, not `[--bootstrap-server HOST:PORT]`."""

    def _format_usage(self, usage, actions, groups, prefix):  # type: ignore[no-untyped-def]
        text = super()._format_usage(usage, actions, groups, prefix)
        return text.replace(f"[{BOOTSTRAP} {METAVAR}]", f"{BOOTSTRAP} {METAVAR}")


class RequiredBootstrapRaw(RequiredBootstrap, argparse.RawDescriptionHelpFormatter):
    """The same, keeping a description's own line breaks."""


def common(parser: argparse.ArgumentParser, default: object, timeout_aliases: tuple[str, ...] = ()) -> None:
    """--bootstrap-server, --output and --timeout-ms on `parser`: the command's own (default None) or an
    action's (default SUPPRESS, so an action's absent flag does not hide the command's)."""
    parser.add_argument(
        BOOTSTRAP,
        metavar=METAVAR,
        default=default,
        help="a broker to bootstrap from, as HOST:PORT (required; before or after the action)",
    )
    parser.add_argument(
        "--output",
        choices=("table", "json", "csv"),
        default=default or "table",
        help="table: the Kafka tool's columns (default); json or csv: the same rows for scripts",
    )
    parser.add_argument(
        "--timeout-ms",
        *timeout_aliases,
        type=int,
        default=default or 30000,
        help="how long to wait for each answer from the broker, in ms (default 30000)",
    )


def groups_choice(p: argparse.ArgumentParser, kind: str = "consumer group") -> None:
    """--group (repeatable) or --all-groups: one of them is required."""
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--group", action="append", help=f"the {kind} id; repeatable")
    g.add_argument("--all-groups", action="store_true", help=f"every {kind} the broker lists")


def describe_views(d: argparse.ArgumentParser, kind: str = "group") -> None:
    """The describe views, with kafka-consumer-groups.sh's / kafka-share-groups.sh's meaning."""
    d.add_argument(
        "--offsets",
        action="store_true",
        help=f"each partition of the {kind}: its offset, the log end offset and the lag (the default view)",
    )
    d.add_argument(
        "--members",
        action="store_true",
        help=f"the {kind}'s members: member id, host, client id and assigned partitions",
    )
    d.add_argument(
        "--state",
        action="store_true",
        help=f"the {kind}'s state, coordinator, assignor/protocol and number of members",
    )
    d.add_argument(
        "--verbose",
        action="store_true",
        help="more columns in the chosen view (epochs and target assignments, where the group has them)",
    )


def set_formatter(parsers: list[argparse.ArgumentParser], raw: bool = False) -> None:
    for p in parsers:
        p.formatter_class = RequiredBootstrapRaw if raw else RequiredBootstrap
