"""The pushes of a SYNC step, kept by the client until the next step went through on every shard.

A shard that failed over without a step's contributions (they were on the killed primary alone, or
after its last checkpoint, or on a primary that handed its shard back before the step closed) asks
for them again (PSERVER_RESEND_STEP), and the client sends these bytes rather than computing the
step again: the step then closes with exactly the contributions it would have had.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Optional, Sequence

from ._proto.pserver.v1 import table_pb2
from .placement import shard_of
from .sparse_rows import group_by_shard

if TYPE_CHECKING:
    from .tables import TableDirectory


class SentPush(NamedTuple):
    """One shard's push of a step, as sent."""

    #: Tensor messages (dense blocks).
    dense: Sequence[Any]
    #: SparseGrad messages (one per table).
    sparse: Sequence[Any]
    #: The push's weight: None when it went unset (the pserver reads 1), 0 for a skip.
    sample_count: Optional[int]


class StepPushes:
    """What one step sent to each shard, under the step's identity (trainer id, step, pass) and
    the shard count its pushes were placed under."""

    def __init__(self, trainer_id: int, step: int, pass_: int, shard_count: int) -> None:
        self.trainer_id = trainer_id
        self.step = step
        self.pass_ = pass_
        self.shard_count = shard_count
        self._by_shard: dict[int, SentPush] = {}

    def record(self, shard: int, push: SentPush) -> None:
        """Keeps what goes to `shard`. The messages are kept as they are: their bytes are the
        client's own, copied out of the trainer's arrays when it built the push (protobuf bytes,
        immutable), so a trainer that reuses its arrays afterwards changes nothing here."""
        self._by_shard[shard] = SentPush(tuple(push.dense), tuple(push.sparse), push.sample_count)

    def sent_to(
        self, shard: int, trainer_id: int, step: int, *, shard_count: int, tables: TableDirectory
    ) -> Optional[SentPush]:
        """What `trainer_id`'s step `step` sent to what is `shard` among `shard_count` shards now;
        None when it took no part in it. Under the count the step ran at, the push as sent. After
        a change of the count, every block and row the step sent that `shard` holds now (rows by
        the bucket placement of `tables`), with the step's sample count (0 when nothing of it
        lands there): the shard's slices came from several old shards, and those that counted the
        step already leave it out (the pserver's marks ahead)."""
        if self.trainer_id != trainer_id or self.step != step:
            return None
        if shard_count == self.shard_count:
            return self._by_shard.get(shard)
        if not self._by_shard:
            return None
        pushes = list(self._by_shard.values())
        dense = [tensor for push in pushes for tensor in push.dense if shard_of(tensor.name, shard_count) == shard]
        sparse = _rows_held_by(shard, [grad for push in pushes for grad in push.sparse], shard_count, tables)
        carrying = [push for push in pushes if push.dense or push.sparse]
        step_count = next((push.sample_count for push in carrying if push.sample_count is not None), None)
        return SentPush(dense, sparse, step_count if dense or sparse else 0)


def _rows_held_by(shard: int, grads: Sequence[Any], shard_count: int, tables: TableDirectory) -> list[Any]:
    """The rows of `grads` (one SparseGrad per table and old shard) that `shard` holds among
    `shard_count`, one SparseGrad per table."""
    if not grads:
        return []  # dense pushes alone need no numpy
    import numpy as np

    by_table: dict[str, list[Any]] = {}
    for grad in grads:
        by_table.setdefault(grad.table, []).append(grad)
    out: list[Any] = []
    for table, parts in by_table.items():
        layout = tables.get(table)
        assert layout is not None  # the client routed these rows by it
        ids = np.frombuffer(b"".join(part.ids for part in parts), dtype="<i8")
        rows = np.frombuffer(b"".join(part.grads for part in parts), dtype="<f4").reshape(len(ids), layout.dim)
        held = group_by_shard(ids, layout, tables.shards_of(layout, shard_count)).get(shard)
        if held is None:
            continue
        grad = table_pb2.SparseGrad(table=table, ids=ids[held].tobytes(), grads=rows[held].tobytes())
        # Admission counts go with their rows, when every part had them.
        if all(part.counts for part in parts):
            counts = np.frombuffer(b"".join(part.counts for part in parts), dtype="<u4")
            grad.counts = counts[held].tobytes()
        out.append(grad)
    return out
