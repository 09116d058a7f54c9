"""The trainer's picture of the cluster: which pserver serves each shard, under which epoch, and
the job's consistency mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Tuple

from ._proto.pserver.v1 import consistency_pb2


@dataclass(frozen=True)
class ShardRoute:
    index: int
    address: str
    #: 0 while the index is unassigned.
    epoch: int
    #: Whether the pserver serves the shard (False while it recovers it): steps wait until it does.
    serving: bool = False


@dataclass(frozen=True)
class View:
    shard_count: int
    block_size: int
    shards: Tuple[ShardRoute, ...] = field(default_factory=tuple)
    #: Orders views: a higher revision is newer.
    revision: int = 0
    initialized: bool = False
    #: How the job's shards treat pushes and reads: applied on arrival ("async"), synchronous
    #: steps ("sync": a step's pushes are averaged, a read for step k waits for step k - 1), or
    #: bounded staleness ("ssp": a read waits until the slowest trainer is close enough).
    consistency: str = "async"

    @classmethod
    def from_proto(cls, view: Any) -> View:
        return cls(
            shard_count=view.shard_count,
            block_size=view.block_size,
            shards=tuple(ShardRoute(s.index, s.address, s.shard_epoch, s.serving) for s in view.shards),
            revision=view.revision,
            initialized=view.initialized,
            consistency=mode_name(view.consistency.mode),
        )

    def complete(self) -> bool:
        """Whether every index has a pserver that serves it (a step cannot run otherwise)."""
        return (
            self.shard_count > 0
            and len(self.shards) == self.shard_count
            and all(s.address != "" and s.epoch > 0 and s.serving for s in self.shards)
        )


def changed_shards(before: View, after: View) -> list[int]:
    """The indices whose pserver or epoch differs between two views."""
    changed: list[int] = []
    for i in range(max(len(before.shards), len(after.shards))):
        a = before.shards[i] if i < len(before.shards) else None
        b = after.shards[i] if i < len(after.shards) else None
        if (a and (a.address, a.epoch)) != (b and (b.address, b.epoch)):
            changed.append(i)
    return changed


def mode_name(mode: int) -> str:
    """The client's name of a proto ConsistencyMode ("async" when unset)."""
    return _MODE_NAMES.get(mode, "async")


_MODE_NAMES = {
    consistency_pb2.CONSISTENCY_MODE_SYNC: "sync",
    consistency_pb2.CONSISTENCY_MODE_BOUNDED_STALENESS: "ssp",
}
