"""Distribute N shards over worker processes with groupcoord.membership.

Run several copies; each prints one JSON line per generation with the shards it now owns. The group's
leader spreads ``shard-0 .. shard-{N-1}`` round robin; a worker joining or leaving moves shards.
With ``--instance-id`` a worker is a static member (KIP-345): restarting it within the session timeout
gets its shards back without a rebalance.

    python docs/examples/shard_workers.py --bootstrap 127.0.0.1:9092 --name w1 --shards 8
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from groupcoord.membership import Assignment, GroupMember, ResourceAssignor


async def main(bootstrap: str, name: str, group: str, shards: int, instance_id: str | None) -> None:
    def on_assigned(assignment: Assignment) -> None:
        line = {"name": name, "generation": assignment.generation, "shards": list(assignment.resources)}
        print(json.dumps(line), flush=True)  # a real worker opens its shards here

    member = GroupMember(
        bootstrap,
        group,
        ResourceAssignor([f"shard-{i}" for i in range(shards)], name="shards"),
        protocol_type="shard-workers",
        instance_id=instance_id,
        client_id=name,
        heartbeat_interval_ms=300,
        session_timeout_ms=6000,
        on_assigned=on_assigned,
    )
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await member.start(wait=False)
    await stop.wait()
    await member.stop()
    print(json.dumps({"name": name, "event": "left"}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="shards")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--instance-id", default=None)
    args = parser.parse_args()
    asyncio.run(main(args.bootstrap, args.name, args.group, args.shards, args.instance_id))
