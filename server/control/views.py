"""Plain data a test asserts on: a group as the coordinator holds it, read through the machine's public
methods (what DescribeGroups answers, plus generation and leader)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: bytes


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str  # Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    generation: int
    protocol_type: str
    protocol: str
    leader: str | None
    members: tuple[MemberView, ...]

    def as_json(self) -> dict:
        out = asdict(self)
        out["members"] = [dict(asdict(m), assignment=m.assignment.hex()) for m in self.members]
        return out

    def matches(self, state: str | None, members: int | None, generation: int | None) -> bool:
        if state is not None and self.state.lower() != state.lower():
            return False
        if members is not None and len(self.members) != members:
            return False
        return generation is None or self.generation >= generation
