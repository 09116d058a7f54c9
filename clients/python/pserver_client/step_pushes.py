"""The pushes of a SYNC step, kept by the client until the next step went through on every shard.

A shard that failed over without a step's contributions (they were on the killed primary alone, or
after its last checkpoint) asks for them again (PSERVER_RESEND_STEP), and the client sends these
bytes rather than computing the step again: the step then closes with exactly the contributions it
would have had.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Sequence


class SentPush(NamedTuple):
    """One shard's push of a step, as sent."""

    #: Tensor messages (dense blocks).
    dense: Sequence[Any]
    #: SparseGrad messages (one per table).
    sparse: Sequence[Any]
    #: The push's weight: None when it went unset (the pserver reads 1), 0 for a skip.
    sample_count: Optional[int]


class StepPushes:
    """What one step sent to each shard, under the step's identity (trainer id, step, pass)."""

    def __init__(self, trainer_id: int, step: int, pass_: int) -> None:
        self.trainer_id = trainer_id
        self.step = step
        self.pass_ = pass_
        self._by_shard: dict[int, SentPush] = {}

    def record(self, shard: int, push: SentPush) -> None:
        """Keeps what goes to `shard`. The messages are kept as they are: their bytes are the
        client's own, copied out of the trainer's arrays when it built the push (protobuf bytes,
        immutable), so a trainer that reuses its arrays afterwards changes nothing here."""
        self._by_shard[shard] = SentPush(tuple(push.dense), tuple(push.sparse), push.sample_count)

    def sent_to(self, shard: int, trainer_id: int, step: int) -> Optional[SentPush]:
        """What `trainer_id`'s step `step` sent to `shard`; None when it took no part in it there."""
        if self.trainer_id != trainer_id or self.step != step:
            return None
        return self._by_shard.get(shard)
