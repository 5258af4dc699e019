"""`groupcoord groups describe` for KIP-848 consumer groups: Kafka 4.3's ConsumerGroupCommand views built from
ConsumerGroupDescribe (API 69), the API its admin client asks first (DescribeGroups shows such a group as Dead).

--members: GROUP, CONSUMER-ID, [GROUP-INSTANCE-ID], HOST, CLIENT-ID, #PARTITIONS, and with --verbose
CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT (the member's epoch and assignment, the
group's target assignment epoch and the member's target). --state: GROUP, COORDINATOR (ID),
ASSIGNMENT-STRATEGY (the server assignor), STATE, #MEMBERS, and with --verbose GROUP-EPOCH and
TARGET-ASSIGNMENT-EPOCH before #MEMBERS.
"""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.protocol.messages import consumer_group_describe as cgd

MISSING = "-"

#: (member id, host, client id, partitions): the owners the offsets view lists, for either kind of group
Owner = tuple[str, str, str, list[tuple[str, int]]]


def parts(a: cgd.DescribedAssignment) -> list[tuple[str, int]]:
    return sorted((tp.topic_name, p) for tp in a.topic_partitions for p in tp.partitions)


def owners(g: cgd.DescribedGroup) -> list[Owner]:
    return [(m.member_id, m.client_host, m.client_id, parts(m.assignment)) for m in g.members]


def assignment_string(ps: list[tuple[str, int]]) -> str:
    """Kafka's getAssignmentString: `topic:p,p;topic:p`, topics sorted, MISSING when empty."""
    by_topic: dict[str, list[int]] = {}
    for t, p in ps:
        by_topic.setdefault(t, []).append(p)
    if not by_topic:
        return MISSING
    return ";".join(f"{t}:" + ",".join(map(str, sorted(v))) for t, v in sorted(by_topic.items()))


def members_view(
    g: cgd.DescribedGroup, verbose: bool, fmt: Callable[[list[int], list[object]], str]
) -> tuple[list[dict[str, object]], str]:
    """(rows for json/csv, the table text) of `describe --members` (Kafka's printMembers)."""
    rows: list[dict[str, object]] = []
    for m in g.members:
        current, target = parts(m.assignment), parts(m.target_assignment)
        rows.append(
            {
                "group": g.group_id,
                "consumer_id": m.member_id,
                "group_instance_id": m.instance_id or "",
                "host": m.client_host,
                "client_id": m.client_id,
                "partitions": len(current),
                "current_epoch": m.member_epoch,
                "current_assignment": assignment_string(current),
                "target_epoch": g.assignment_epoch,
                "target_assignment": assignment_string(target),
            }
        )
    with_instance = any(r["group_instance_id"] for r in rows)
    keys = ["group", "consumer_id", "group_instance_id", "host", "client_id", "partitions"]
    heads = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    mins = [15, 15, 17, 15, 15, 15]
    cols = [0, 1, 2, 3, 4, 5] if with_instance else [0, 1, 3, 4, 5]
    widths = [max([mins[i], *(len(str(r[keys[i]])) for r in rows)]) for i in cols]
    vkeys = ["current_epoch", "current_assignment", "target_epoch", "target_assignment"]
    vheads = ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    if verbose:
        widths += [
            15,
            max([20, *(len(str(r["current_assignment"])) for r in rows)]),
            15,
            max([20, *(len(str(r["target_assignment"])) for r in rows)]),
        ]
    head = [heads[i] for i in cols] + (vheads if verbose else [])
    lines = [fmt(widths, head)]
    for r in rows:
        lines.append(fmt(widths, [r[keys[i]] for i in cols] + ([r[k] for k in vkeys] if verbose else [])))
    return rows, "\n" + "\n".join(lines)


def state_view(
    g: cgd.DescribedGroup, coordinator: str, verbose: bool, fmt: Callable[[list[int], list[object]], str]
) -> tuple[dict[str, object], str]:
    """(the row, the table text) of `describe --state` (Kafka's printStates)."""
    row: dict[str, object] = {
        "group": g.group_id,
        "coordinator": coordinator,
        "assignment_strategy": g.assignor_name or MISSING,
        "state": g.group_state,
    }
    heads = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    widths = [max(15, len(g.group_id)), max(25, len(coordinator)), 20, 20]
    if verbose:
        row["group_epoch"] = g.group_epoch
        row["target_assignment_epoch"] = g.assignment_epoch
        heads += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        widths += [15, 25]
    row["members"] = len(g.members)
    heads.append("#MEMBERS")
    return row, "\n" + fmt(widths, heads) + "\n" + fmt(widths, list(row.values()))
