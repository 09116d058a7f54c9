"""PyTorch modules over pserver: embedding tables whose rows live on the pservers, and a module's
dense parameters kept there.

    from pserver_client.torch import RemoteEmbeddingBag, RemoteParameters

    emb = RemoteEmbeddingBag(client, "emb", 16, mode="mean")
    params = RemoteParameters(client, head, optimizer={"adam": {}, "learning_rate": {"base": 1e-3}})
    params.init(tables=[emb.table_spec(optimizer={"adagrad": {}})])

    def fn(ctx):
        params.pull(ctx)                     # the head's values; clears its grads
        loss_of(head(emb(ctx, ids, offsets))).backward()   # stages the rows' gradients
        params.push(ctx)                     # dense and row gradients in one push per shard

    client.step(fn)

A forward reads only the batch's distinct ids (`ctx.lookup`); its backward stages their gradients
(`ctx.push_rows`), which go out with the step's push. No table is ever held by the trainer: a
table's update is its row optimizer on the server, a module's parameters' their tensors' optimizer.

`client.step` runs the step function again when the view changes under it (a pserver failed
over): dropout draws new masks, BatchNorm updates its running statistics again, reads of data
inside the function run again. Read the batch before the step and keep other side effects out.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

try:
    import torch
except ImportError as err:  # the package itself needs no torch; this module does
    raise ImportError(
        "pserver_client.torch needs PyTorch: apt-get install python3-torch (Debian) or "
        "pip install pserver-client[torch]"
    ) from err

import numpy as np

from . import codes
from .errors import ClientError
from .view import View, changed_shards

if TYPE_CHECKING:
    from .client import Client, OptimizerLike
    from .tables import TableLike
    from .step_context import StepContext

__all__ = ["RemoteEmbedding", "RemoteEmbeddingBag", "RemoteParameters", "Bags", "Prefetched", "bags_of"]

log = logging.getLogger("pserver_client.torch")

#: The bag reductions RemoteEmbeddingBag offers (torch.nn.EmbeddingBag's "max" has no row
#: gradient to sum and is not one of them).
MODES = ("sum", "mean")


class Bags:
    """A batch of bags in flat form: `ids` (int64, every element of every bag in order), `bag` (the
    bag of each element), `count` bags, and `weights` (one per element, or None)."""

    __slots__ = ("ids", "bag", "count", "weights")

    def __init__(self, ids: Any, bag: Any, count: int, weights: Optional[Any]) -> None:
        self.ids, self.bag, self.count, self.weights = ids, bag, count, weights


def bags_of(
    input: Any, offsets: Any = None, per_sample_weights: Any = None, include_last_offset: bool = False
) -> Bags:
    """torch.nn.EmbeddingBag's input conventions: a 2-D input is a batch of bags of its row length
    (no offsets); a 1-D input is cut into bags at `offsets` (1-D, starting at 0, non-decreasing;
    with `include_last_offset` its last entry is the input's length and ends the last bag). A bag
    of no ids is empty (its output row is zeros). `per_sample_weights`, if given, has the input's
    shape. Input errors are ValueError, naming the value."""
    ids = torch.as_tensor(input).cpu()  # ids are read into numpy for the lookup
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"input: integer ids expected, got {ids.dtype}")
    weights = None if per_sample_weights is None else torch.as_tensor(per_sample_weights).cpu()
    if weights is not None and weights.shape != ids.shape:
        raise ValueError(
            f"per_sample_weights: shape {tuple(weights.shape)} expected (the input's), got {tuple(ids.shape)}"
        )
    if ids.dim() == 2:
        if offsets is not None:
            raise ValueError("offsets: must be None for a 2-D input (each row is a bag)")
        rows, width = ids.shape
        bag = torch.arange(rows, dtype=torch.int64).repeat_interleave(width)
        return Bags(ids.reshape(-1).to(torch.int64), bag, int(rows), None if weights is None else weights.reshape(-1))
    if ids.dim() != 1:
        raise ValueError(f"input: 1-D (with offsets) or 2-D expected, got {ids.dim()}-D")
    if offsets is None:
        raise ValueError("offsets: required for a 1-D input")
    starts = torch.as_tensor(offsets).to(torch.int64)
    if starts.dim() != 1:
        raise ValueError(f"offsets: 1-D expected, got {starts.dim()}-D")
    n = ids.shape[0]
    if include_last_offset:
        if starts.shape[0] == 0 or int(starts[-1]) != n:
            raise ValueError(f"offsets: with include_last_offset the last offset must be the input's length {n}")
        starts = starts[:-1]
    if starts.shape[0] > 0:
        if int(starts[0]) != 0:
            raise ValueError(f"offsets: the first offset must be 0, got {int(starts[0])}")
        if bool((starts[1:] < starts[:-1]).any()) or int(starts[-1]) > n:
            raise ValueError(f"offsets: must be non-decreasing and at most the input's length {n}")
    elif n > 0:
        raise ValueError(f"offsets: no bags for an input of {n} ids")
    count = int(starts.shape[0])
    # Element i belongs to the last bag whose start is <= i (empty bags are skipped over).
    bag = torch.searchsorted(starts, torch.arange(n, dtype=torch.int64), right=True) - 1
    return Bags(ids.to(torch.int64), bag, count, weights)


class _Rows(torch.autograd.Function):  # type: ignore[misc]
    """out[b] = Σ over the elements j of bag b of w_j · rows[inverse[j]] (÷ the bag's size for
    "mean"; 0 for an empty bag). Backward: each distinct row's gradient is the sum, over the
    elements that used it, of the gradient of their bag's output (scaled the same way), staged
    with one push_rows of the distinct ids and their counts. It returns no gradient for the rows
    themselves: they are the server's, updated by its row optimizer."""

    @staticmethod
    def forward(
        fctx: Any,
        rows: Any,
        weights: Any,
        scale: Any,
        inverse: Any,
        bag: Any,
        count: int,
        stage: Any,
    ) -> Any:
        element = rows.index_select(0, inverse) * scale.unsqueeze(1)
        out = torch.zeros((count, rows.shape[1]), dtype=rows.dtype, device=rows.device)
        out.index_add_(0, bag, element)
        fctx.save_for_backward(rows, scale, inverse, bag)
        fctx.stage = stage
        fctx.weighted = weights is not None
        return out

    @staticmethod
    def backward(fctx: Any, grad_out: Any) -> Any:
        rows, scale, inverse, bag = fctx.saved_tensors
        per_element = grad_out.index_select(0, bag)
        grads = torch.zeros_like(rows)
        grads.index_add_(0, inverse, per_element * scale.unsqueeze(1))
        fctx.stage(grads)
        weights_grad = None
        if fctx.weighted and fctx.needs_input_grad[1]:
            # scale is the weight itself in "sum", the only mode that takes weights
            weights_grad = (per_element * rows.index_select(0, inverse)).sum(dim=1)
        return None, weights_grad, None, None, None, None, None


class Prefetched:
    """A batch whose rows are read ahead of the step that uses it (`RemoteEmbedding.prefetch`,
    `RemoteEmbeddingBag.prefetch`): the read of its distinct ids starts at once, in the module's
    background thread (one read at a time per module), and the step's forward takes the rows it
    got. Rows read under another view than the step's (a pserver failed over or the shards
    changed in between, or the step runs again under a fresh view) are read again in the step;
    a read that failed, or is still running when the step's deadline comes, too. Read ahead of
    step k + 1 while step k runs, the rows do not have step k's update of the ids both batches
    share: pipelining trades that one step of staleness for the wait."""

    __slots__ = ("module", "bags", "shape", "distinct", "inverse", "counts", "_read")

    def __init__(self, module: _RemoteTable, bags: Bags, shape: tuple[int, ...] = ()) -> None:
        #: `shape`: RemoteEmbedding's ids' shape.
        self.module, self.bags, self.shape = module, bags, shape
        self.distinct, self.inverse, self.counts = _distinct_ids(bags)
        self._read: Optional[concurrent.futures.Future[Any]] = None
        if len(self.distinct):
            self._read = module._reader().submit(_read_under_view, module.client, module.table, self.distinct)

    def rows(self, ctx: StepContext) -> Any:
        """The rows of `distinct` as `ctx.lookup` would read them under the step's view."""
        table, dim = self.module.table, self.module.dim
        if self._read is None:
            return np.zeros((0, dim), np.float32)
        try:
            view, rows = self._read.result(timeout=max(0.0, ctx.deadline - time.monotonic()))
        except Exception as err:  # failed, or not done by the deadline: the step reads them itself
            log.info("reading table %s ahead failed (%s); reading it in the step", table, err)
            return ctx.lookup(table, self.distinct)
        if view.shard_count != ctx.view.shard_count or changed_shards(view, ctx.view):
            return ctx.lookup(table, self.distinct)
        return rows


def _read_under_view(client: Client, table: str, ids: Any) -> tuple[View, Any]:
    """The rows of `ids` and the view they were read under: a read numbered step 0, as
    client.lookup (it waits for no step under SYNC or SSP)."""
    return client._read(lambda ctx: (ctx.view, ctx.lookup(table, ids)))


def _distinct_ids(bags: Bags) -> tuple[Any, Any, Any]:
    """The batch's distinct ids (sorted), each element's index among them, and their counts."""
    distinct, inverse, counts = np.unique(bags.ids.numpy(), return_inverse=True, return_counts=True)
    return distinct, inverse.reshape(-1).astype(np.int64), counts


def _bag_forward(ctx: StepContext, module: _RemoteTable, bags: Bags, mode: str, ahead: Optional[Prefetched] = None) -> Any:
    """Looks the batch's distinct ids up (or takes the rows read ahead) and builds the bags'
    output through _Rows, on the module's device and in its dtype: the rows are moved there once,
    their gradients back (as float32 on the CPU, what the wire carries) once."""
    table, dim = module.table, module.dim
    on = {"device": module.device, "dtype": module.dtype}
    if ahead is not None:
        distinct, inverse_np, counts = ahead.distinct, ahead.inverse, ahead.counts
        rows_np = ahead.rows(ctx)
    else:
        distinct, inverse_np, counts = _distinct_ids(bags)
        rows_np = ctx.lookup(table, distinct) if len(distinct) else np.zeros((0, dim), np.float32)
    if rows_np.shape[1] != dim:
        raise ClientError(
            codes.CLIENT_SHAPE_MISMATCH,
            f"table {table}: its rows have dim {rows_np.shape[1]}, the module was built for {dim}",
        )
    rows = torch.from_numpy(np.ascontiguousarray(rows_np)).to(**on)
    inverse = torch.from_numpy(inverse_np).to(module.device)
    bag = bags.bag.to(module.device)
    n = bags.ids.shape[0]
    if bags.weights is not None:
        if mode != "sum":
            raise ValueError(f"per_sample_weights: only for mode 'sum', not {mode!r}")
        weights = bags.weights.to(**on)
        scale = weights
    else:
        weights = None
        scale = torch.ones(n, **on)
    if mode == "mean" and n:
        sizes = torch.bincount(bag, minlength=bags.count).to(module.dtype)
        scale = scale / sizes.index_select(0, bag)

    def stage(grads: Any) -> None:
        if len(distinct):
            g = grads.detach().to(device="cpu", dtype=torch.float32).contiguous().numpy()
            ctx.push_rows(table, distinct, g, counts.astype(np.int64))

    # Autograd calls backward only when an input needs a gradient: the rows do (for the staging),
    # though backward returns none for them.
    rows.requires_grad_(True)
    return _Rows.apply(rows, weights, scale, inverse, bag, bags.count, stage)


class _RemoteTable(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, client: Client, table: str, dim: int, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim: must be positive, got {dim}")
        dtype = torch.float32 if dtype is None else dtype
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype: a floating-point torch.dtype expected, got {dtype!r}")
        self.client = client
        self.table = table
        self.dim = dim
        #: Where the output is made and in what dtype (torch.nn.Embedding's factory arguments);
        #: rows travel and are stored as float32 whatever this is.
        self.device = torch.device("cpu" if device is None else device)
        self.dtype = dtype
        self._read_ahead: Optional[concurrent.futures.ThreadPoolExecutor] = None

    def _reader(self) -> concurrent.futures.ThreadPoolExecutor:
        """The thread this table's rows are read ahead in: one read at a time."""
        if self._read_ahead is None:
            self._read_ahead = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"pserver-ahead-{self.table}")
        return self._read_ahead

    def _ahead(self, batch: Prefetched, extra: Sequence[Any]) -> Prefetched:
        if batch.module is not self:
            raise ValueError(f"input: a batch prefetched by table {batch.module.table}'s module, not {self.table}'s")
        if any(a is not None for a in extra):
            raise ValueError("input: a prefetched batch carries its offsets and weights; give them to prefetch")
        return batch

    def table_spec(self, **fields: Any) -> dict[str, Any]:
        """The table's spec for init_params(tables=...): its name and dim, with `fields` (buckets,
        initializer, optimizer, ... as TableSpec's snake_case fields)."""
        return {"name": self.table, "dim": self.dim, **fields}

    def extra_repr(self) -> str:
        default = (self.device.type, self.dtype) == ("cpu", torch.float32)
        where = "" if default else f", device={self.device}, dtype={self.dtype}"
        return f"table={self.table!r}, dim={self.dim}{where}"


class RemoteEmbedding(_RemoteTable):
    """torch.nn.Embedding over a pserver table: `forward(ctx, ids)` takes integer ids of any
    shape and returns rows of shape ids.shape + (dim,), float32 on the CPU unless the module was
    made with `device=` and `dtype=`. Its backward stages the row
    gradients of the batch's distinct ids (summed over repeats) in the step's push."""

    def forward(self, ctx: StepContext, ids: Any) -> Any:
        """The rows of `ids`, or of a batch `prefetch(ids)` returned."""
        ahead = ids if isinstance(ids, Prefetched) else None
        if ahead is not None:
            self._ahead(ahead, ())
        bags, shape = (ahead.bags, ahead.shape) if ahead else self._bags(ids)
        return _bag_forward(ctx, self, bags, "sum", ahead).reshape(*shape, self.dim)

    def prefetch(self, ids: Any) -> Prefetched:
        """Starts reading the rows of `ids` now, for a later step's `forward(ctx, batch)`."""
        return Prefetched(self, *self._bags(ids))

    @staticmethod
    def _bags(ids: Any) -> tuple[Bags, tuple[int, ...]]:
        flat = torch.as_tensor(ids).cpu()
        if flat.dtype.is_floating_point or flat.dtype == torch.bool:
            raise ValueError(f"ids: integer ids expected, got {flat.dtype}")
        shape = tuple(flat.shape)
        n = flat.numel()
        return Bags(flat.reshape(-1).to(torch.int64), torch.arange(n, dtype=torch.int64), n, None), shape


class RemoteEmbeddingBag(_RemoteTable):
    """torch.nn.EmbeddingBag over a pserver table, mode "sum" or "mean": `forward(ctx, input,
    offsets=None, per_sample_weights=None)` with EmbeddingBag's input conventions (a 2-D input of
    fixed-size bags, or a 1-D input cut at `offsets`; an empty bag gives zeros; weights in "sum"
    only) returns (bags, dim), float32 on the CPU unless made with `device=` and `dtype=`. Its backward stages, for each distinct id of the batch, the
    sum of the output gradients of the bags that used it (÷ bag size for "mean"; × weight), with
    its number of occurrences, in the step's push."""

    def __init__(
        self,
        client: Client,
        table: str,
        dim: int,
        mode: str = "sum",
        include_last_offset: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(client, table, dim, device=device, dtype=dtype)
        if mode not in MODES:
            raise ValueError(f"mode: one of {MODES} expected, got {mode!r}")
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(self, ctx: StepContext, input: Any, offsets: Any = None, per_sample_weights: Any = None) -> Any:
        """The bags of `input` (cut at `offsets`), or of a batch `prefetch` returned."""
        if isinstance(input, Prefetched):
            ahead = self._ahead(input, (offsets, per_sample_weights))
            return _bag_forward(ctx, self, ahead.bags, self.mode, ahead)
        bags = bags_of(input, offsets, per_sample_weights, self.include_last_offset)
        return _bag_forward(ctx, self, bags, self.mode)

    def prefetch(self, input: Any, offsets: Any = None, per_sample_weights: Any = None) -> Prefetched:
        """Starts reading the rows of the batch's distinct ids now, for a later step's
        `forward(ctx, batch)`; the arguments are forward's, checked now."""
        return Prefetched(self, bags_of(input, offsets, per_sample_weights, self.include_last_offset))

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, mode={self.mode!r}"


class RemoteParameters:
    """A module's parameters as pserver tensors, named as `module.named_parameters()` names them
    (after `prefix`). `init` declares them with their current values; in a step, `pull(ctx)`
    copies the pserver's values into them and clears their gradients, and `push(ctx)` sends their
    `.grad` as the step's dense gradients (with the rows the step's remote embeddings staged)."""

    def __init__(
        self, client: Client, module: Any, optimizer: Optional[OptimizerLike] = None, prefix: str = ""
    ) -> None:
        self.client = client
        self.module = module
        self.optimizer = optimizer
        self.prefix = prefix
        #: {pserver tensor name: parameter}
        self.parameters: dict[str, Any] = {prefix + name: p for name, p in module.named_parameters()}

    def init(
        self,
        tables: Sequence[TableLike] = (),
        tensors: Optional[Mapping[str, Any]] = None,
        optimizer: Optional[Any] = None,
    ) -> None:
        """Declares the parameters (their current values, float32) and `tables` with the client's
        init_params: the elected trainer writes them, the others wait. `tensors` adds other
        tensors to the same init; `optimizer` overrides the constructor's (one config, or {name:
        config})."""
        model: dict[str, Any] = {name: _as_array(p.detach()) for name, p in self.parameters.items()}
        model.update(tensors or {})
        self.client.init_params(model, optimizer if optimizer is not None else self.optimizer, tables=tables)

    def pull(self, ctx: StepContext) -> None:
        """Copies the pserver's values into the parameters (without recording a gradient) and
        sets their `.grad` to None, so that a re-run of the step starts from no gradient."""
        values = ctx.get_params(list(self.parameters))
        with torch.no_grad():
            for name, p in self.parameters.items():
                p.copy_(torch.from_numpy(np.ascontiguousarray(values[name])).reshape(p.shape))
                p.grad = None

    def push(self, ctx: StepContext, sample_count: Optional[int] = None) -> None:
        """Sends each parameter's `.grad` as the step's dense gradients (a parameter without one is
        left out, as torch.optim leaves it); the rows staged by the step's backward go out in the
        same push. `sample_count`, the batch's size, weighs the push in a SYNC step's mean."""
        grads = {name: _as_array(p.grad) for name, p in self.parameters.items() if p.grad is not None}
        ctx.send_grads(grads, sample_count=sample_count)


def _as_array(t: Any) -> Any:
    """A tensor as a float32 numpy array of its shape (a 0-d one as shape (1,))."""
    a = t.detach().to(torch.float32).cpu().contiguous().numpy()
    return a.reshape(1) if a.ndim == 0 else a
