"""`groupcoord share-groups`: kafka-share-groups.sh's actions (Kafka 4.3's ShareGroupCommand), columns and
messages, against any Kafka-protocol broker that speaks KIP-932's admin APIs.

Actions: `list` [--state], `describe` (--offsets, the default view: GROUP TOPIC PARTITION START-OFFSET LAG;
--members; --state; --verbose), `reset-offsets` (one group, --topic/--all-topics, --to-earliest, --to-latest,
--to-datetime, and --to-offset which Kafka's tool lacks; --dry-run, the default, or --execute), `delete`
and `delete-offsets`. The APIs: ListGroups v5 (TypesFilter share), ShareGroupDescribe (77),
DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92), DeleteGroups,
ListOffsets.

Exit codes as `groupcoord groups`: 0 done, 1 an error (printed as the Kafka tool prints it, `Error: ...`), 2 a
usage error. Kafka's tool exits 0 after most errors it prints; a script here can tell them apart.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import alter_share_group_offsets as asgo
from groupcoord.protocol.messages import delete_share_group_offsets as dsgo
from groupcoord.protocol.messages import describe_share_group_offsets as dsgof
from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
from groupcoord.protocol.messages.list_groups import ListedGroup, ListGroupsRequest
from groupcoord.protocol.messages.share_group_describe import DescribedShareGroup, ShareGroupDescribeRequest
from groupcoord.server.ops.admin_client import EARLIEST, LATEST, Admin, AdminError, Connection, error_name
from groupcoord.server.ops.groups_args import common, describe_views, groups_choice, set_formatter
from groupcoord.server.ops.groups_cli import KAFKA_ERRORS, datetime_ms
from groupcoord.server.ops.groups_output import Output, UsageError
from groupcoord.server.ops.groups_output import fmt as fmt_row

MISSING = "-"
SHARE_STATES = ("Stable", "Empty", "Dead", "Unknown")  # GroupState.groupStatesForType(SHARE), display names


def add_share_groups_arguments(parser: argparse.ArgumentParser) -> None:
    common(parser, None, ("--timeout",))
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser("list", help="list share groups (kafka-share-groups.sh --list)")
    ls.add_argument("--state", nargs="?", const="", default=None, help="show states; filter: comma-separated")
    d = actions.add_parser("describe", help="describe share groups (--offsets is the default view)")
    groups_choice(d, "share group")
    describe_views(d, "share group")
    r = actions.add_parser(
        "reset-offsets", help="reset an inactive share group's start offsets (dry run by default)"
    )
    r.add_argument("--group", required=True, help="the share group id (one group: it must be empty)")
    r.add_argument("--topic", action="append", default=[], help="TOPIC or TOPIC:P1,P2; repeatable")
    r.add_argument("--all-topics", action="store_true", help="every share partition the group has")
    spec = r.add_mutually_exclusive_group(required=True)
    spec.add_argument("--to-earliest", action="store_true", help="to each partition's log start offset")
    spec.add_argument("--to-latest", action="store_true", help="to each partition's log end offset")
    spec.add_argument("--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone (default UTC)")
    spec.add_argument("--to-offset", type=int, help="(not in Kafka's tool) an offset, kept within the log")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="set the new start offsets")
    dl = actions.add_parser("delete", help="delete empty share groups (DeleteGroups)")
    groups_choice(dl, "share group")
    do = actions.add_parser("delete-offsets", help="delete a share group's offsets of whole topics (API 92)")
    do.add_argument("--group", required=True, help="the share group id")
    do.add_argument("--topic", action="append", required=True, help="TOPIC; repeatable")
    for sub in (ls, d, r, dl, do):
        common(sub, argparse.SUPPRESS, ("--timeout",))
    set_formatter([parser, ls, d, r, dl, do])


def run_share_groups(args: argparse.Namespace) -> int:
    if not args.bootstrap_server:
        print("groupcoord share-groups: --bootstrap-server is required", file=sys.stderr)
        return 2
    out = Output(args.output)
    try:
        code = asyncio.run(_run(args, out))
    except AdminError as exc:
        out.error(f"Executing share group command failed due to {exc}")
        code = 1
    except UsageError as exc:
        print(f"groupcoord share-groups: {exc}", file=sys.stderr)
        return 2
    out.flush()
    return code


# ------------------------------------------------------------------------------------------ the calls


class ShareAdmin:
    """The KIP-932 admin calls over `Admin`'s connections (versions checked against the broker's)."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin

    @staticmethod
    def _version(c: Connection, api: int, lo: int, hi: int) -> int:
        theirs = c.versions.get(api)
        if theirs is None or theirs[1] < lo or theirs[0] > hi:
            name = ApiKey(api).name
            raise AdminError(f"the broker at {c.host}:{c.port} does not support {name} (API {api})")
        return min(hi, theirs[1])

    async def list(self, states: list[str]) -> list[ListedGroup]:
        cluster = await self.admin.metadata([])
        out: list[ListedGroup] = []
        for addr in sorted(set(cluster.brokers.values())) or [self.admin.bootstrap]:
            c = await self.admin.conn(addr)
            v = self._version(c, ApiKey.LIST_GROUPS, 5, 5)
            resp = await c.call(
                ApiKey.LIST_GROUPS, ListGroupsRequest(states_filter=tuple(states), types_filter=("share",)), v
            )
            if resp.error_code:
                raise AdminError(f"ListGroups on {addr[0]}:{addr[1]}: {error_name(resp.error_code)}")
            out.extend(resp.groups)
        return sorted(out, key=lambda g: g.group_id)

    async def describe(self, group: str) -> DescribedShareGroup:
        c = await self.admin.coordinator_conn(group)
        v = self._version(c, ApiKey.SHARE_GROUP_DESCRIBE, 1, 1)
        resp = await c.call(ApiKey.SHARE_GROUP_DESCRIBE, ShareGroupDescribeRequest(group_ids=(group,)), v)
        return resp.groups[0]  # type: ignore[no-any-return]

    async def offsets(
        self, group: str, topics: dict[str, list[int]] | None = None
    ) -> dict[tuple[str, int], tuple[int, int, int] | None]:
        """(topic, partition) -> (start offset, leader epoch, lag; -1 when not known), None where the group
        has no start offset (as the Java Admin's listShareGroupOffsets); partitions in error are left out."""
        c = await self.admin.coordinator_conn(group)
        v = self._version(c, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1)
        req_topics = (
            None
            if topics is None
            else tuple(dsgof.DescribeShareGroupOffsetsRequestTopic(t, tuple(ps)) for t, ps in topics.items())
        )
        req = dsgof.DescribeShareGroupOffsetsRequest(
            groups=(dsgof.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=req_topics),)
        )
        resp = await c.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, req, v)
        g = resp.groups[0]
        if g.error_code:
            raise AdminError(_exception(g.error_code, g.error_message))
        out: dict[tuple[str, int], tuple[int, int, int] | None] = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code == 0:
                    info = (p.start_offset, p.leader_epoch, p.lag if v >= 1 else -1)
                    out[(t.topic_name, p.partition_index)] = info if p.start_offset >= 0 else None
        return out

    async def alter(
        self, group: str, offsets: dict[tuple[str, int], int]
    ) -> asgo.AlterShareGroupOffsetsResponse:
        c = await self.admin.coordinator_conn(group)
        v = self._version(c, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0)
        by_topic: dict[str, list[asgo.AlterShareGroupOffsetsRequestPartition]] = {}
        for (t, p), o in sorted(offsets.items()):
            by_topic.setdefault(t, []).append(asgo.AlterShareGroupOffsetsRequestPartition(p, o))
        req = asgo.AlterShareGroupOffsetsRequest(
            group_id=group,
            topics=tuple(asgo.AlterShareGroupOffsetsRequestTopic(t, tuple(ps)) for t, ps in by_topic.items()),
        )
        return await c.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, req, v)  # type: ignore[no-any-return]

    async def delete_offsets(self, group: str, topics: list[str]) -> dsgo.DeleteShareGroupOffsetsResponse:
        c = await self.admin.coordinator_conn(group)
        v = self._version(c, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0)
        req = dsgo.DeleteShareGroupOffsetsRequest(
            group_id=group, topics=tuple(dsgo.DeleteShareGroupOffsetsRequestTopic(t) for t in topics)
        )
        return await c.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, req, v)  # type: ignore[no-any-return]


def _exception(code: int, message: str | None) -> str:
    """How the Java tool shows a failed Admin future: the exception's class and message."""
    known = KAFKA_ERRORS.get(code)
    if known is None:
        return f"{error_name(code)}: {message}" if message else error_name(code)
    return f"org.apache.kafka.common.errors.{known[0]}: {message or known[1]}"


def _message(code: int, message: str | None) -> str:
    """An error's getMessage(): the broker's message, else Kafka's default one."""
    known = KAFKA_ERRORS.get(code)
    return message or (known[1] if known else error_name(code))


# ----------------------------------------------------------------------------------------- the actions


async def _run(args: argparse.Namespace, out: Output) -> int:
    admin = Admin(args.bootstrap_server, args.timeout_ms / 1000)
    sa = ShareAdmin(admin)
    try:
        if args.action == "list":
            return await _list(sa, args, out)
        if args.action == "reset-offsets":
            return await _reset(admin, sa, args, out)
        if args.action == "delete-offsets":
            return await _delete_offsets(sa, args, out)
        groups = list(dict.fromkeys(args.group or []))
        if getattr(args, "all_groups", False):
            groups = [g.group_id for g in await sa.list([])]
        if args.action == "describe":
            return await _describe(admin, sa, sorted(groups), args, out)
        return await _delete(admin, sa, groups, out)
    finally:
        await admin.close()


async def _list(sa: ShareAdmin, args: argparse.Namespace, out: Output) -> int:
    states: list[str] = []
    if args.state:
        by_lower = {s.lower(): s for s in SHARE_STATES}
        for s in args.state.split(","):
            if s.strip().lower() not in by_lower:
                raise UsageError(
                    f"Invalid state list '{args.state}'. Valid states are: {', '.join(SHARE_STATES)}"
                )
            states.append(by_lower[s.strip().lower()])
    groups = await sa.list(states)
    out.add([{"group": g.group_id, "state": g.group_state or "Unknown"} for g in groups])
    if args.state is None:
        out.table("\n".join(g.group_id for g in groups))
    else:
        width = max([15, *(len(g.group_id) for g in groups)])
        lines = [fmt_row([width], ["GROUP", "STATE"])]
        lines += [fmt_row([width], [g.group_id, g.group_state or "Unknown"]) for g in groups]
        out.table("\n".join(lines))
    return 0


def _check_described(group: str, d: DescribedShareGroup, out: Output) -> bool:
    """A describe error ends the Java tool with "Executing share group command failed due to ..."."""
    if d.error_code:
        out.error(f"Executing share group command failed due to {_exception(d.error_code, d.error_message)}")
        return False
    return True


def _assignment(d: Any) -> str:
    parts = [(t.topic_name, p) for t in d.assignment.topic_partitions for p in t.partitions]
    by_topic: dict[str, list[int]] = {}
    for t, p in parts:
        by_topic.setdefault(t, []).append(p)
    return ";".join(f"{t}:" + ",".join(map(str, sorted(ps))) for t, ps in sorted(by_topic.items()))


async def _describe(
    admin: Admin, sa: ShareAdmin, groups: list[str], args: argparse.Namespace, out: Output
) -> int:
    failed = False
    for group in groups:
        d = await sa.describe(group)
        if not _check_described(group, d, out):
            failed = True
            continue
        if args.members and not args.offsets:
            _members(group, d, args.verbose, out)
        elif args.state and not args.offsets:
            await _states(admin, group, d, args.verbose, out)
        else:
            await _offsets(sa, group, args.verbose, out)
    return 1 if failed else 0


def _empty_note(group: str, d: DescribedShareGroup) -> None:
    if d.group_state == "Empty":
        print(f"\nShare group '{group}' has no active members.", file=sys.stderr)


async def _offsets(sa: ShareAdmin, group: str, verbose: bool, out: Output) -> None:
    offsets = await sa.offsets(group)
    if not offsets:
        out.table(f"\nShare group '{group}' has no offset information.")
        return
    rows = []
    for (t, p), info in sorted(offsets.items()):
        start, epoch, lag = info if info is not None else (-1, -1, -1)
        rows.append({
            "group": group, "topic": t, "partition": p,
            "leader_epoch": epoch if epoch >= 0 else None,
            "start_offset": start if start >= 0 else None,
            "lag": lag if lag >= 0 else None,
        })  # fmt: skip
    out.add(rows)
    widths = [max(15, len(group)), max([15, *(len(r["topic"]) for r in rows)]), 10, 13, 13]
    heads = ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if verbose else []) + ["START-OFFSET", "LAG"]
    keys = ["group", "topic", "partition"] + (["leader_epoch"] if verbose else []) + ["start_offset", "lag"]
    lines = [fmt_row(widths, heads)]
    lines += [fmt_row(widths, [MISSING if r[k] is None else r[k] for k in keys]) for r in rows]
    out.table("\n" + "\n".join(lines))


async def _states(admin: Admin, group: str, d: DescribedShareGroup, verbose: bool, out: Output) -> None:
    _empty_note(group, d)
    node, host, port = await admin.coordinator(group)
    coord = f"{host}:{port}  ({node})"
    widths = [max(15, len(group)), max(25, len(coord)), 15] + ([12, 17] if verbose else [])
    row: list[object] = [group, coord, d.group_state]
    heads = ["GROUP", "COORDINATOR (ID)", "STATE"]
    if verbose:
        row += [d.group_epoch, d.assignment_epoch]
        heads += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
    row.append(len(d.members))
    heads.append("#MEMBERS")
    keys = (
        ["group", "coordinator", "state"]
        + (["group_epoch", "assignment_epoch"] if verbose else [])
        + ["members"]
    )
    out.add([dict(zip(keys, row, strict=True))])
    out.table("\n" + fmt_row(widths, heads) + "\n" + fmt_row(widths, row))


def _members(group: str, d: DescribedShareGroup, verbose: bool, out: Output) -> None:
    _empty_note(group, d)
    if not d.members:
        return
    members = sorted(d.members, key=lambda m: m.member_id)
    widths = [
        max(15, len(group)),
        max([15, *(len(m.member_id) for m in members)]),
        max([15, *(len(m.client_host) for m in members)]),
        max([15, *(len(m.client_id) for m in members)]),
        12,
    ] + ([13] if verbose else [])
    heads = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (
        ["MEMBER-EPOCH"] if verbose else []
    )
    lines = [fmt_row(widths, [*heads, "ASSIGNMENT"])]
    for m in members:
        count = sum(len(t.partitions) for t in m.assignment.topic_partitions)
        row: list[object] = [group, m.member_id, m.client_host, m.client_id, count]
        row += [m.member_epoch] if verbose else []
        lines.append(fmt_row(widths, [*row, _assignment(m)]))
        out.add([{
            "group": group, "consumer_id": m.member_id, "host": m.client_host, "client_id": m.client_id,
            "partitions": count, "member_epoch": m.member_epoch, "assignment": _assignment(m),
        }])  # fmt: skip
    out.table("\n" + "\n".join(lines))


async def _delete(admin: Admin, sa: ShareAdmin, groups: list[str], out: Output) -> int:
    """The tool checks first (not a share group, Dead, not Empty), then deletes the rest."""
    listed = {g.group_id: g.group_state for g in await sa.list([])}
    failed: dict[str, str] = {}
    for g in groups:
        state = listed.get(g)
        if state is None:
            failed[g] = f"java.lang.IllegalArgumentException: Group '{g}' is not a share group."
        elif state == "Dead":
            failed[g] = f"java.lang.IllegalStateException: Share group '{g}' group state is DEAD."
        elif state != "Empty":
            failed[g] = (
                f"org.apache.kafka.common.errors.GroupNotEmptyException: Share group '{g}' is not EMPTY."
            )
    ok: list[str] = []
    for g in groups:
        if g in failed:
            continue
        c = await admin.coordinator_conn(g)
        resp = await c.call(ApiKey.DELETE_GROUPS, DeleteGroupsRequest(groups_names=(g,)))
        code = resp.results[0].error_code
        if code:
            failed[g] = _exception(code, None)
        else:
            ok.append(g)
    out.add([{"group": g, "error": failed.get(g)} for g in groups])
    if not failed:
        out.table(f"Deletion of requested share groups ({', '.join(repr(g) for g in ok)}) was successful.")
        return 0
    out.error("Deletion of some share groups failed:")
    for g, why in failed.items():
        out.table(f"* Group '{g}' could not be deleted due to: {why}")
    if ok:
        out.table(f"\nThese share groups were deleted successfully: {', '.join(repr(g) for g in ok)}")
    return 1


async def _delete_offsets(sa: ShareAdmin, args: argparse.Namespace, out: Output) -> int:
    """ShareGroupService.deleteOffsets: the group-level error (if any), then TOPIC STATUS per topic; with a
    group-level error every topic shows it too (the Admin fails each topic's future with it)."""
    topics = list(dict.fromkeys(args.topic))
    resp = await sa.delete_offsets(args.group, topics)
    status: dict[str, str | None] = {}
    if resp.error_code:
        if resp.error_code in (
            E.INVALID_GROUP_ID,
            E.GROUP_ID_NOT_FOUND,
            E.GROUP_AUTHORIZATION_FAILED,
            E.NON_EMPTY_GROUP,
        ):
            out.error(_message(resp.error_code, resp.error_message))
        elif resp.error_code not in (E.TOPIC_AUTHORIZATION_FAILED, E.UNKNOWN_TOPIC_OR_PARTITION):
            out.error(f"Encounter some unknown error: {_exception(resp.error_code, resp.error_message)}")
        status = {t: _message(resp.error_code, resp.error_message) for t in topics}
    else:
        answered = {t.topic_name: t for t in resp.responses}
        for t in topics:
            r = answered.get(t)
            if r is None:
                status[t] = "The broker did not answer for this topic."
            else:
                status[t] = _message(r.error_code, r.error_message) if r.error_code else None
    width = max([15, *(len(t) for t in topics)])
    lines = [fmt_row([width], ["TOPIC", "STATUS"])]
    for t in sorted(status):
        lines.append(fmt_row([width], [t, f"Error: {status[t]}" if status[t] else "Successful"]))
    out.add(
        [
            {"topic": t, "status": "Successful" if status[t] is None else f"Error: {status[t]}"}
            for t in sorted(status)
        ]
    )
    out.table("\n" + "\n".join(lines))
    return 1 if resp.error_code or any(status.values()) else 0


async def _reset(admin: Admin, sa: ShareAdmin, args: argparse.Namespace, out: Output) -> int:
    """ShareGroupService.resetOffsets: only an Empty (or missing) group; the partitions from --topic or, with
    --all-topics, the group's share partitions; the new offsets from ListOffsets; AlterShareGroupOffsets only
    with --execute."""
    group = args.group
    if not (args.topic or args.all_topics):
        raise UsageError("reset-offsets needs --topic or --all-topics")
    d = await sa.describe(group)
    if d.error_code == E.GROUP_ID_NOT_FOUND:
        pass  # a group that does not exist yet: AlterShareGroupOffsets creates it
    elif not _check_described(group, d, out):
        return 1
    elif d.group_state not in ("Empty", "Dead"):
        print(f"Share group '{group}' is not empty.", file=sys.stderr)
        return 1
    if args.topic:
        tps = await _topic_partitions(admin, args.topic)
    else:
        tps = sorted((await sa.offsets(group)).keys())
    if not tps:
        return 0
    earliest = await admin.log_offsets(tps, EARLIEST)
    latest = await admin.log_offsets(tps, LATEST)
    missing = [tp for tp in tps if earliest.get(tp) is None or latest.get(tp) is None]
    if missing:
        names = ",".join(f"{t}-{p}" for t, p in missing)
        raise AdminError(f'The partitions "{names}" do not exist')
    lo = {tp: int(earliest[tp] or 0) for tp in tps}
    hi = {tp: int(latest[tp] or 0) for tp in tps}
    if args.to_earliest:
        plan = lo
    elif args.to_latest:
        plan = hi
    elif args.to_offset is not None:
        plan = {tp: min(max(args.to_offset, lo[tp]), hi[tp]) for tp in tps}
    else:
        found = await admin.log_offsets(tps, datetime_ms(args.to_datetime))
        plan = {tp: v if v is not None and v >= 0 else hi[tp] for tp, v in found.items()}
    if args.execute:
        resp = await sa.alter(group, plan)
        if resp.error_code:
            raise AdminError(_exception(resp.error_code, resp.error_message))
        bad = [(t.topic_name, p) for t in resp.responses for p in t.partitions if p.error_code]
        if bad:
            t, p = bad[0]
            raise AdminError(
                f"{_exception(p.error_code, p.error_message)} ({t.topic_name}-{p.partition_index})"
            )
    rows = [
        {"group": group, "topic": t, "partition": p, "new_offset": o} for (t, p), o in sorted(plan.items())
    ]
    out.add(rows)
    widths = [max(15, len(group)), max([15, *(len(t) for t, _ in plan)]), 10]
    lines = [fmt_row(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])]
    lines += [fmt_row(widths, list(r.values())) for r in rows]
    out.table("\n" + "\n".join(lines))
    return 0


async def _topic_partitions(admin: Admin, specs: list[str]) -> list[tuple[str, int]]:
    """OffsetsUtils.parseTopicPartitionsToReset: TOPIC:P1,P2 as given, a bare TOPIC as all its partitions."""
    out: list[tuple[str, int]] = []
    bare = [s for s in specs if ":" not in s]
    cluster = await admin.metadata(bare) if bare else None
    for s in specs:
        topic, _, plist = s.partition(":")
        if plist:
            try:
                out.extend((topic, int(p)) for p in plist.split(","))
            except ValueError:
                raise UsageError(f"--topic {s!r}: partitions must be comma-separated numbers") from None
        elif cluster is not None and topic in cluster.partitions:
            out.extend((topic, p) for p in sorted(cluster.partitions[topic]))
        else:
            raise AdminError(
                f"org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                f"This server does not host this topic-partition. ({topic})"
            )
    return list(dict.fromkeys(out))
