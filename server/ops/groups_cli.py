"""`groupcoord groups`: kafka-consumer-groups.sh's actions, columns and rules, against any Kafka-protocol broker.

Exit codes a script can use: 0 done, 1 an error (printed as kafka-consumer-groups.sh prints it, `Error: ...`),
2 a usage error. Table output copies the tool's column layout; `--output json|csv` gives the same rows.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import re
import sys
import time
from datetime import UTC, datetime

from groupcoord.protocol.consumer import decode_assignment
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.consumer.regex import syntax_error
from groupcoord.server.ops import groups_consumer as cg
from groupcoord.server.ops.admin_client import EARLIEST, LATEST, Admin, AdminError, error_name
from groupcoord.server.ops.groups_args import common, describe_views, groups_choice, set_formatter
from groupcoord.server.ops.groups_output import Output, UsageError, fmt

MISSING = "-"
#: Kafka's GroupState.groupStatesForType(CONSUMER): classic and KIP-848 consumer groups
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
#: ListGroups v5 GroupType -> Kafka's GroupType name (what `list --type` prints)
TYPES = {"classic": "Classic", "consumer": "Consumer"}


def add_groups_arguments(parser: argparse.ArgumentParser) -> None:
    common(parser, None)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser("list", help="list groups (kafka-consumer-groups.sh --list)")
    ls.add_argument("--state", nargs="?", const="", default=None, help="show states; filter: comma-separated")
    ls.add_argument(
        "--type",
        nargs="?",
        const="",
        default=None,
        help="show types (Classic, Consumer); filter: comma-separated",
    )
    d = actions.add_parser("describe", help="describe groups (--offsets is the default view)")
    groups_choice(d)
    describe_views(d)
    r = actions.add_parser(
        "reset-offsets", help="reset committed offsets of inactive groups (dry run by default)"
    )
    groups_choice(r)
    r.add_argument("--topic", action="append", default=[], help="TOPIC or TOPIC:P1,P2; repeatable")
    r.add_argument("--all-topics", action="store_true", help="every partition the group has committed")
    spec = r.add_mutually_exclusive_group(required=True)
    spec.add_argument("--to-earliest", action="store_true", help="to each partition's log start offset")
    spec.add_argument("--to-latest", action="store_true", help="to each partition's log end offset")
    spec.add_argument("--to-current", action="store_true", help="to the committed offset (a no-op plan)")
    spec.add_argument("--to-offset", type=int, help="to this offset, kept within each partition's log")
    spec.add_argument("--shift-by", type=int, help="by this many from the committed offset (negative: back)")
    spec.add_argument("--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone (default UTC)")
    spec.add_argument("--by-duration", help="ISO-8601 duration back from now, e.g. PT1H30M or P1D")
    spec.add_argument(
        "--from-file", help="CSV lines topic,partition,offset (or group,topic,partition,offset)"
    )
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    r.add_argument("--export", action="store_true", help="print the plan as CSV for --from-file")
    dl = actions.add_parser("delete", help="delete groups (DeleteGroups)")
    groups_choice(dl)
    do = actions.add_parser("delete-offsets", help="delete a group's offsets (OffsetDelete, API 47)")
    do.add_argument("--group", required=True, help="the consumer group id")
    do.add_argument("--topic", action="append", required=True, help="TOPIC or TOPIC:P1,P2; repeatable")
    vr = actions.add_parser(
        "validate-regex",
        help="check a regex against RE2's syntax, as the coordinator compiles SubscribedTopicRegex",
    )
    vr.add_argument("regex", help="the regular expression (RE2 syntax), quoted for the shell")
    for sub in (ls, d, r, dl, do, vr):
        common(sub, argparse.SUPPRESS)
    set_formatter([parser, ls, d, r, dl, do])  # validate-regex asks no broker: its usage keeps the brackets


def run_groups(args: argparse.Namespace) -> int:
    if args.action == "validate-regex":  # Kafka's --validate-regex: no broker needed
        error = syntax_error(args.regex)
        if error is None:
            print(f"The regular expression `{args.regex}` is valid.")
            return 0
        print(f"The regular expression `{args.regex}` is invalid: {error}.")
        return 1
    if not args.bootstrap_server:
        print("groupcoord groups: --bootstrap-server is required", file=sys.stderr)
        return 2
    out = Output(args.output)
    try:
        code = asyncio.run(_run(args, out))
    except AdminError as exc:
        out.error(str(exc))
        code = 1
    except UsageError as exc:
        print(f"groupcoord groups: {exc}", file=sys.stderr)
        return 2
    out.flush()
    return code


async def _run(args: argparse.Namespace, out: Output) -> int:
    admin = Admin(args.bootstrap_server, args.timeout_ms / 1000)
    try:
        if args.action == "list":
            return await _list(admin, args, out)
        groups = args.group or []
        if getattr(args, "all_groups", False):
            groups = [g.group_id for g in await admin.list_groups([])]
        if args.action == "describe":
            return await _describe(admin, groups, args, out)
        if args.action == "reset-offsets":
            return await _reset(admin, groups, args, out)
        if args.action == "delete":
            return await _delete(admin, groups, out)
        return await _delete_offsets(admin, args, out)
    finally:
        await admin.close()


async def _list(admin: Admin, args: argparse.Namespace, out: Output) -> int:
    states: list[str] = []
    if args.state:
        by_lower = {s.lower(): s for s in STATES}
        for s in args.state.split(","):
            if s.strip().lower() not in by_lower:
                raise UsageError(f"Invalid state list '{args.state}'. Valid states are: {', '.join(STATES)}")
            states.append(by_lower[s.strip().lower()])
    types: set[str] = set()
    if args.type:
        parsed = {t.strip().lower() for t in args.type.lower().split(",")}
        if not parsed <= set(TYPES):
            raise UsageError(
                f"Invalid types list '{args.type}'. Valid types are: {', '.join(sorted(TYPES.values()))}"
            )
        types = parsed
    groups = [g for g in await admin.list_groups(states) if g.protocol_type in ("consumer", "")]
    if types:
        groups = [g for g in groups if _type(g.group_type, g.protocol_type).lower() in types]
    out.add(
        [
            {
                "group": g.group_id,
                "type": _type(g.group_type, g.protocol_type),
                "state": g.group_state or "Unknown",
            }
            for g in groups
        ]
    )
    if args.state is None and args.type is None:
        out.table("\n".join(g.group_id for g in groups))
    else:
        width = max([15, *(len(g.group_id) for g in groups)]) + 10
        head, cols = ["GROUP"], [lambda g: g.group_id]
        if args.type is not None:
            head.append("TYPE")
            cols.append(lambda g: _type(g.group_type, g.protocol_type))
        if args.state is not None:
            head.append("STATE")
            cols.append(lambda g: g.group_state or "Unknown")
        widths = [width] + [20] * (len(head) - 1)
        out.table("\n".join(fmt(widths, r) for r in [head] + [[c(g) for c in cols] for g in groups]))
    return 0


def _type(group_type: str, protocol_type: str) -> str:
    """Kafka's GroupType name; a broker below ListGroups v5 names none (Kafka's admin: Classic for a group
    with a protocol type, which every listed group here has)."""
    return TYPES.get(group_type.lower(), "Unknown") if group_type else "Classic"


def _parts(assignment: bytes) -> list[tuple[str, int]]:
    if not assignment:
        return []
    try:
        a = decode_assignment(assignment)
    except Exception:
        return []
    return [(tp.topic, p) for tp in a.assigned_partitions for p in tp.partitions]


def _exists(group: str, state: str, out: Output) -> bool:
    """shouldPrintMemberState: Dead means no such group; Empty and rebalancing get a note on stderr."""
    if state == "Dead":
        out.error(f"Consumer group '{group}' does not exist.")
        return False
    if state == "Empty":
        print(f"\nConsumer group '{group}' has no active members.", file=sys.stderr)
    elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=sys.stderr)
    return True


async def _describe(admin: Admin, groups: list[str], args: argparse.Namespace, out: Output) -> int:
    failed = False
    for group in sorted(groups):
        modern = await admin.consumer_describe(group)
        if modern is not None:
            failed |= not await _describe_consumer(admin, modern, args, out)
            continue
        g = await admin.describe(group)
        if args.state and not (args.offsets or args.members):
            if not _exists(group, g.group_state, out):
                failed = True
                continue
            node, host, port = await admin.coordinator(group)
            coord = f"{host}:{port}  ({node})"
            row = [group, coord, g.protocol_data or MISSING, g.group_state, len(g.members)]
            widths = [max(15, len(group)), max(25, len(coord)), 20, 20]
            out.add(
                [
                    dict(
                        zip(
                            ("group", "coordinator", "assignment_strategy", "state", "members"),
                            row,
                            strict=True,
                        )
                    )
                ]
            )
            out.table(
                "\n" + fmt(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"])
            )
            out.table(fmt(widths, row))
            continue
        if args.members and not args.offsets:
            if not _exists(group, g.group_state, out):
                failed = True
                continue
            rows = []
            for m in g.members:
                parts = _parts(m.member_assignment)
                rows.append(
                    [group, m.member_id, m.group_instance_id, m.client_host, m.client_id, len(parts), parts]
                )
            rows.sort(key=lambda r: -r[5])
            with_instance = any(r[2] for r in rows)
            keys = ["group", "consumer_id", "group_instance_id", "host", "client_id", "partitions"]
            heads = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
            cols = [0, 1, 2, 3, 4, 5] if with_instance else [0, 1, 3, 4, 5]
            mins = [15, 15, 17, 15, 15, 15]
            widths = [max([mins[i], *(len(str(r[i] or "")) for r in rows)]) for i in cols]
            lines = [fmt(widths, [heads[i] for i in cols] + (["ASSIGNMENT"] if args.verbose else []))]
            for r in rows:
                extra = [cg.assignment_string(r[6])] if args.verbose else []
                lines.append(fmt(widths, [r[i] if r[i] is not None else MISSING for i in cols] + extra))
                out.add([{**dict(zip(keys, r[:6], strict=True)), "assignment": cg.assignment_string(r[6])}])
            out.table("\n" + "\n".join(lines))
            continue
        if not _exists(group, g.group_state, out):
            failed = True
            continue
        owners = [(m.member_id, m.client_host, m.client_id, _parts(m.member_assignment)) for m in g.members]
        _print_offsets(await _offset_rows(admin, group, owners), out)
    return 1 if failed else 0


async def _describe_consumer(admin: Admin, g: object, args: argparse.Namespace, out: Output) -> bool:
    """A KIP-848 consumer group (ConsumerGroupDescribe): Kafka 4.3's --members and --state columns; the offsets
    view as for a classic group. False when the group does not exist (Dead)."""
    assert isinstance(g, cg.cgd.DescribedGroup)
    if not _exists(g.group_id, g.group_state, out):
        return False
    if args.state and not (args.offsets or args.members):
        node, host, port = await admin.coordinator(g.group_id)
        row, text = cg.state_view(g, f"{host}:{port}  ({node})", args.verbose, fmt)
        out.add([row])
        out.table(text)
    elif args.members and not args.offsets:
        rows, text = cg.members_view(g, args.verbose, fmt)
        out.add(rows)
        out.table(text)
    else:
        _print_offsets(await _offset_rows(admin, g.group_id, cg.owners(g)), out)
    return True


def _print_offsets(rows: list[dict], out: Output) -> None:
    """The offsets view (printOffsets): one row per partition, the same for both kinds of group."""
    widths = [
        max([15, *(len(r["group"]) for r in rows)]),
        max([15, *(len(r["topic"]) for r in rows)]),
        10,
        15,
        15,
        15,
        max([15, *(len(r["consumer_id"]) for r in rows)]),
        max([15, *(len(r["host"]) for r in rows)]),
    ]
    lines = [fmt(widths, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                           "CONSUMER-ID", "HOST", "CLIENT-ID"])]  # fmt: skip
    for r in rows:
        lines.append(fmt(widths, [MISSING if v is None else v for v in r.values()]))
    out.add(rows)
    out.table("\n" + "\n".join(lines) + "\n")


async def _offset_rows(admin: Admin, group: str, members: list[cg.Owner]) -> list[dict]:
    """collectGroupsOffsets: members' partitions first (most partitions first), then committed-but-unowned."""
    committed = await admin.committed(group)
    owned: list[tuple[tuple[str, int], tuple[str, str, str]]] = []
    for mid, host, client, ps in sorted(members, key=lambda m: -len(m[3])):
        for tp in sorted(ps):
            owned.append((tp, (mid, host, client)))
    owned_tps = {tp for tp, _ in owned}
    rest = [(tp, (MISSING, MISSING, MISSING)) for tp in sorted(committed) if tp not in owned_tps]
    ends = await admin.log_offsets([tp for tp, _ in owned + rest], LATEST)
    rows = []
    for tp, (cid, host, client) in owned + rest:
        cur, end = committed.get(tp), ends.get(tp)
        rows.append({
            "group": group, "topic": tp[0], "partition": tp[1], "current_offset": cur, "log_end_offset": end,
            "lag": end - cur if cur is not None and end is not None else None,
            "consumer_id": cid, "host": host, "client_id": client,
        })  # fmt: skip
    return rows


def _partitions_of(spec: list[str], known: dict[str, dict[int, int]]) -> list[tuple[str, int]]:
    out = []
    for item in spec:
        topic, _, plist = item.partition(":")
        if plist:
            try:
                out.extend((topic, int(p)) for p in plist.split(","))
            except ValueError:
                raise UsageError(f"--topic {item!r}: partitions must be comma-separated numbers") from None
        elif topic in known:
            out.extend((topic, p) for p in sorted(known[topic]))
        else:
            raise AdminError(f"topic '{topic}' does not exist")
    return out


def _duration_ms(text: str) -> int:
    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text)
    if not m or text in ("P", "PT"):
        raise UsageError(f"--by-duration: expected an ISO-8601 duration like PT1H30M or P1D, got {text!r}")
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return int(((d * 24 + h) * 60 + mi) * 60_000 + s * 1000)


def datetime_ms(text: str) -> int:
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--to-datetime: expected YYYY-MM-DDTHH:mm:SS.sss, got {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


#: printed on stderr when reset-offsets has neither mode flag. Kafka's tool warns here too, but about its own
#: next major version; ours says what happened and what to add
NO_EXECUTE_WARNING = (
    "WARN: nothing was changed: without --execute, reset-offsets only shows the new offsets (a dry run). "
    "Add --execute to commit them, or --dry-run to ask for the dry run explicitly and silence this warning."
)


async def _reset(admin: Admin, groups: list[str], args: argparse.Namespace, out: Output) -> int:
    if not (args.topic or args.all_topics or args.from_file):
        raise UsageError("reset-offsets needs --topic, --all-topics or --from-file")
    if not (args.dry_run or args.execute):
        print(NO_EXECUTE_WARNING, file=sys.stderr)
    from_file: dict[str, dict[tuple[str, int], int]] = {}
    if args.from_file:
        with open(args.from_file) as fh:
            for row in csv.reader(fh):
                if not row:
                    continue
                g, t, p, o = row if len(row) == 4 else (None, *row)
                for target in [g] if g else groups:
                    from_file.setdefault(target, {})[(t, int(p))] = int(o)
    plan: dict[str, dict[tuple[str, int], int]] = {}
    failed = False
    for group in groups:
        g = await admin.describe(group)
        if g.group_state not in ("Empty", "Dead"):
            out.error(
                f"Assignments can only be reset if the group '{group}' is inactive, but the current state is "
                f"{g.group_state}."
            )
            failed = True
            continue
        plan[group] = await _new_offsets(admin, group, args, from_file.get(group, {}))
    if args.execute:
        for group, offsets in plan.items():
            errors = await admin.commit(group, offsets)
            bad = {tp: e for tp, e in errors.items() if e}
            if bad:
                failed = True
                for (t, p), e in sorted(bad.items()):
                    out.error(f"committing {t}-{p} for group '{group}' failed: {error_name(e)}")
    rows = [
        {"group": g, "topic": t, "partition": p, "new_offset": o}
        for g, offsets in sorted(plan.items())
        for (t, p), o in sorted(offsets.items())
    ]
    if args.export:
        multi = len(plan) > 1
        print("\n".join((f"{r['group']}," if multi else "") + f"{r['topic']},{r['partition']},{r['new_offset']}"
                        for r in rows))  # fmt: skip
        return 1 if failed else 0
    out.add(rows)
    lines = [fmt([30, 30, 10, 15], ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])]
    lines += [fmt([30, 30, 10, 15], list(r.values())) for r in rows]
    if plan:
        out.table("\n" + "\n".join(lines))
    return 1 if failed else 0


async def _new_offsets(
    admin: Admin, group: str, args: argparse.Namespace, from_file: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    committed = await admin.committed(group)
    if args.from_file:
        tps = sorted(from_file)
    elif args.all_topics:
        tps = sorted(committed)
    else:
        cluster = await admin.metadata([t.partition(":")[0] for t in args.topic])
        tps = _partitions_of(args.topic, cluster.partitions)
    if not tps:
        return {}
    earliest = await admin.log_offsets(tps, EARLIEST)
    latest = await admin.log_offsets(tps, LATEST)
    missing = [tp for tp in tps if earliest.get(tp) is None or latest.get(tp) is None]
    if missing:
        raise AdminError("unknown partitions: " + ", ".join(f"{t}-{p}" for t, p in missing))

    def clamp(tp: tuple[str, int], offset: int) -> int:
        lo, hi = earliest[tp], latest[tp]
        assert lo is not None and hi is not None
        return min(max(offset, lo), hi)

    if args.to_earliest:
        return {tp: earliest[tp] for tp in tps}  # type: ignore[misc]
    if args.to_latest:
        return {tp: latest[tp] for tp in tps}  # type: ignore[misc]
    if args.to_current:
        return {tp: committed.get(tp, latest[tp]) for tp in tps}  # type: ignore[misc]
    if args.to_offset is not None:
        return {tp: clamp(tp, args.to_offset) for tp in tps}
    if args.shift_by is not None:
        return {tp: clamp(tp, committed.get(tp, latest[tp]) + args.shift_by) for tp in tps}  # type: ignore[operator]
    if args.from_file:
        return {tp: clamp(tp, from_file[tp]) for tp in tps}
    ts = (
        datetime_ms(args.to_datetime)
        if args.to_datetime
        else int(time.time() * 1000) - _duration_ms(args.by_duration)
    )
    found = await admin.log_offsets(tps, ts)
    return {tp: found[tp] if found.get(tp) not in (None, -1) else latest[tp] for tp in tps}  # type: ignore[misc]


async def _delete(admin: Admin, groups: list[str], out: Output) -> int:
    results = await admin.delete_groups(groups)
    ok = [g for g, e in results.items() if e == 0]
    bad = {g: e for g, e in results.items() if e}
    out.add([{"group": g, "error": error_name(e)} for g, e in sorted(results.items())])
    if ok:
        out.table(f"Deletion of requested consumer groups ({', '.join(repr(g) for g in ok)}) was successful.")
    if bad:
        out.error("Deletion of some consumer groups failed:")
        for g, e in sorted(bad.items()):
            out.table(f"* Group '{g}' could not be deleted due to: {error_name(e)}")
    return 1 if bad else 0


#: Kafka's exception class and `Errors` message per code, for the STATUS column of delete-offsets: the Java tool
#: prints `"Error: " + ExecutionException.getMessage()`, i.e. the cause's class name and message.
KAFKA_ERRORS = {
    E.UNKNOWN_TOPIC_OR_PARTITION: (
        "UnknownTopicOrPartitionException",
        "This server does not host this topic-partition.",
    ),
    E.COORDINATOR_LOAD_IN_PROGRESS: (
        "CoordinatorLoadInProgressException",
        "The coordinator is loading and hence can't process requests.",
    ),
    E.COORDINATOR_NOT_AVAILABLE: ("CoordinatorNotAvailableException", "The coordinator is not available."),
    E.NOT_COORDINATOR: ("NotCoordinatorException", "This is not the correct coordinator."),
    E.INVALID_GROUP_ID: ("InvalidGroupIdException", "The group id is invalid."),
    E.TOPIC_AUTHORIZATION_FAILED: ("TopicAuthorizationException", "Topic authorization failed."),
    E.GROUP_AUTHORIZATION_FAILED: ("GroupAuthorizationException", "Group authorization failed."),
    E.NON_EMPTY_GROUP: ("GroupNotEmptyException", "The group is not empty."),
    E.GROUP_ID_NOT_FOUND: ("GroupIdNotFoundException", "The group id does not exist."),
    E.GROUP_SUBSCRIBED_TO_TOPIC: (
        "GroupSubscribedToTopicException",
        "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.",
    ),
}
UNKNOWN_TOPIC = E.UNKNOWN_TOPIC_OR_PARTITION
#: the group-level errors the tool prints as `Errors.message()`; the partition-level ones it sends to the table
GROUP_LEVEL = (E.INVALID_GROUP_ID, E.GROUP_ID_NOT_FOUND, E.GROUP_AUTHORIZATION_FAILED, E.NON_EMPTY_GROUP)
PARTITION_LEVEL = (E.GROUP_SUBSCRIBED_TO_TOPIC, E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION)


def kafka_error_message(code: int) -> str:
    """`Errors.message()`: what the tool prints for a group-level error."""
    known = KAFKA_ERRORS.get(code)
    return known[1] if known else error_name(code)


def _partition_status(code: int) -> str:
    known = KAFKA_ERRORS.get(code)
    if known is None:
        return f"Error: {error_name(code)}"
    return f"Error: org.apache.kafka.common.errors.{known[0]}: {known[1]}"


async def _delete_offsets(admin: Admin, args: argparse.Namespace, out: Output) -> int:
    """ConsumerGroupService.deleteOffsets: the group-level verdict first, then a TOPIC PARTITION STATUS row per
    partition. A topic named without partitions that the cluster does not know gets one row with partition `-`
    (Kafka's describeTopics failure); the request is still sent for the rest. The group-level verdict is the
    response's top-level error, else its first partition error, as the Admin client's `all()` reports it, else
    the unknown topic's error (where Kafka would print success): "Request succeeded" only when every row
    says Successful."""
    explicit = [t for t in args.topic if ":" in t]
    bare = list(dict.fromkeys(t for t in args.topic if ":" not in t))
    results: dict[tuple[str, int], int] = {}
    tps = _partitions_of(explicit, {})
    if bare:
        cluster = await admin.metadata(bare)
        for topic in bare:
            if topic in cluster.partitions:
                tps.extend((topic, p) for p in sorted(cluster.partitions[topic]))
            else:
                results[(topic, -1)] = UNKNOWN_TOPIC
    tps = list(dict.fromkeys(tps))
    top, parts = await admin.delete_offsets(args.group, tps)
    verdict = top
    for tp in tps:
        code = top or parts.get(tp, E.UNKNOWN_SERVER_ERROR)  # a partition the answer left out failed
        results[tp] = code
        if not verdict and code:
            verdict = code
    if not verdict:  # only an unknown topic failed: Kafka still says "Request succeeded" here, we do not
        verdict = next((e for e in results.values() if e), 0)
    if verdict == 0:
        out.table(f"Request succeeded for deleting offsets from group {args.group}.")
    elif verdict in GROUP_LEVEL:
        out.error(kafka_error_message(verdict))
    elif verdict in PARTITION_LEVEL:
        out.error("Encountered some partition-level error, see the follow-up details.")
    else:
        out.error(f"Encountered some unknown error: {error_name(verdict)}")
    ordered = sorted(results.items(), key=lambda kv: kv[0][0] + str(kv[0][1]))
    out.add(
        [
            {
                "topic": t,
                "partition": p if p >= 0 else None,
                "status": _partition_status(e) if e else "Successful",
                "error": error_name(e),
            }
            for (t, p), e in ordered
        ]
    )
    width = max([15, *(len(t) for t, _ in results)])
    lines = [fmt([width, 10, 15], ["TOPIC", "PARTITION", "STATUS"])]
    lines += [
        fmt([width, 10, 15], [t, p if p >= 0 else MISSING, _partition_status(e) if e else "Successful"])
        for (t, p), e in ordered
    ]
    out.table("\n" + "\n".join(lines))
    return 1 if verdict or any(results.values()) else 0
