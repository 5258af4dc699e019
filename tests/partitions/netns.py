"""Network namespaces joined by a bridge, and faults between them by nftables (issue 43).

Each member (`pg`, `n1`..`nN`, `clients`) gets a namespace `<tag>-<member>` with one veth whose other end is
a port of the bridge `<tag>br` in the root namespace; the bridge has the address .254 so the harness itself
(the root namespace) reaches every member. Addresses are 10.<a>.<b>.<k>/24, a subnet picked from the tag.

Faults are nftables rules in a table `inet gcfault` inside the members' own namespaces (the root namespace's
ruleset is never touched): a rule in B's input chain dropping A's address is a one-way partition A -> B
(B never hears A; A hears B, and TCP to A stalls since B's acknowledgements are all A gets), the same
rule both ways is a full partition. Dropping, never rejecting: neither side is told, as in a real partition.
`heal()` flushes every chain; `teardown()` deletes the namespaces (their tables go with them) and the
bridge, and is safe to call twice and after a failure half-way through `create()`.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field

PREFIX = "gcp"


def unavailable() -> str | None:
    """Why the harness cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces and nftables need root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return (
                f"`{tool}` is not installed (apt-get install iproute2 nftables; `make test-partitions` does)"
            )
    return None


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


@dataclass
class Net:
    members: list[str]
    tag: str = field(default_factory=lambda: f"{PREFIX}{random.randrange(16**4):04x}")
    ips: dict[str, str] = field(default_factory=dict)
    #: active drops: (from member, to member) pairs whose packets the receiver's input chain drops
    drops: set[tuple[str, str]] = field(default_factory=set)

    def ns(self, member: str) -> str:
        return f"{self.tag}-{member}"

    def exec_prefix(self, member: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns(member)]

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    def create(self) -> Net:
        h = int(self.tag[len(PREFIX) :], 16)
        subnet = f"10.{100 + h % 100}.{h // 100 % 250}"
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "addr", "add", f"{subnet}.254/24", "dev", self.bridge)
            sh("ip", "link", "set", self.bridge, "up")
            for k, member in enumerate(self.members, start=1):
                ns, veth = self.ns(member), f"{self.tag}v{k}"
                sh("ip", "netns", "add", ns)
                sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
                sh("ip", "link", "set", veth, "master", self.bridge, "up")
                self.ips[member] = f"{subnet}.{k}"
                sh("ip", "-n", ns, "addr", "add", f"{subnet}.{k}/24", "dev", "eth0")
                sh("ip", "-n", ns, "link", "set", "eth0", "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                self._nft(member, "add table inet gcfault")
                self._nft(member, "add chain inet gcfault input { type filter hook input priority 0; }")
        except BaseException:
            self.teardown()
            raise
        return self

    def _nft(self, member: str, rule: str) -> None:
        sh(*self.exec_prefix(member), "nft", rule)

    def drop(self, src: str, dst: str) -> None:
        """`dst` stops hearing `src` (one way)."""
        if (src, dst) in self.drops:
            return
        self._nft(dst, f"add rule inet gcfault input ip saddr {self.ips[src]} drop")
        self.drops.add((src, dst))

    def partition(self, a: str, b: str, *, one_way: bool = False) -> None:
        self.drop(a, b)
        if not one_way:
            self.drop(b, a)

    def isolate(self, member: str, others: list[str]) -> None:
        for other in others:
            self.partition(member, other)

    def heal(self) -> None:
        for member in {dst for _, dst in self.drops}:
            self._nft(member, "flush chain inet gcfault input")
        self.drops.clear()

    def rules(self) -> str:
        """Every member's fault table, for a report."""
        out = []
        for member in self.members:
            r = sh(*self.exec_prefix(member), "nft", "list", "table", "inet", "gcfault", check=False)
            out.append(f"# {member}\n{r.stdout}")
        return "\n".join(out)

    def teardown(self) -> None:
        for member in self.members:
            sh("ip", "netns", "del", self.ns(member), check=False)  # its veth end and nft table go with it
        sh("ip", "link", "del", self.bridge, check=False)


def leftovers() -> list[str]:
    """Namespaces of this harness still present (a run killed before its teardown)."""
    r = sh("ip", "netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.startswith(PREFIX)]
