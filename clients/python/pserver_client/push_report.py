"""What became of a step's push on each shard it went to (`StepContext.send_grads`, `skip`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List

from ._proto.pserver.v1 import parameter_server_pb2 as ps_pb2

#: The outcome's name of a push a shard applied at once (ASYNC, SSP).
APPLIED = "PUSH_OUTCOME_APPLIED"
#: A retry of a push the shard had already taken.
DUPLICATE = "PUSH_OUTCOME_DUPLICATE"
#: SYNC: held in the shard's open step until every trainer of the roster pushed.
ACCUMULATED = "PUSH_OUTCOME_ACCUMULATED"
#: SYNC (backup trainers): the step had already closed without it.
DROPPED_LATE = "PUSH_OUTCOME_DROPPED_LATE"


@dataclass(frozen=True)
class ShardPush:
    shard: int
    #: The PushOutcome's name, as in the proto ("PUSH_OUTCOME_ACCUMULATED"; the constants above).
    outcome: str
    #: The shard's version after the push (SYNC: its steps closed).
    version: int

    @classmethod
    def from_reply(cls, shard: int, reply: Any) -> ShardPush:
        return cls(shard, str(ps_pb2.PushOutcome.Name(reply.outcome)), reply.version)


@dataclass
class PushReport:
    #: One entry per shard pushed to, in shard order.
    shards: List[ShardPush] = field(default_factory=list)
