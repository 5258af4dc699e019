"""Leader election for a scheduler with groupcoord.membership: exactly one process runs the scheduler.

Run several copies; each prints one JSON line per generation. The member that holds the resource
"scheduler" is the active scheduler; when it stops (SIGTERM/SIGINT: it leaves the group gracefully),
another member takes over within one rebalance.

    python docs/examples/leader_election.py --bootstrap 127.0.0.1:9092 --name a
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from groupcoord.membership import Assignment, GroupMember, ResourceAssignor


def report(name: str, event: str, assignment: Assignment) -> None:
    active = "scheduler" in assignment.resources
    line = {"name": name, "event": event, "generation": assignment.generation, "active": active}
    print(json.dumps(line), flush=True)


async def main(bootstrap: str, name: str, group: str) -> None:
    member = GroupMember(
        bootstrap,
        group,
        ResourceAssignor(["scheduler"], name="leader-election"),
        protocol_type="scheduler",
        client_id=name,
        heartbeat_interval_ms=300,
        session_timeout_ms=6000,
        on_revoked=lambda a: report(name, "revoked", a),
    )
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await member.start(wait=False)

    async def follow() -> None:
        async for assignment in member.assignments():
            report(name, "assigned", assignment)  # a real scheduler starts or stops its loop here

    follower = asyncio.create_task(follow())
    await stop.wait()
    await member.stop()  # graceful leave: the others rebalance at once instead of waiting for the session
    await follower
    print(json.dumps({"name": name, "event": "left"}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="scheduler")
    args = parser.parse_args()
    asyncio.run(main(args.bootstrap, args.name, args.group))
