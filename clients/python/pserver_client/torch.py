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

if TYPE_CHECKING:
    from .client import Client, OptimizerLike
    from .tables import TableLike
    from .step_context import StepContext

__all__ = ["RemoteEmbedding", "RemoteEmbeddingBag", "RemoteParameters", "Bags", "bags_of"]

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


def _bag_forward(ctx: StepContext, module: _RemoteTable, bags: Bags, mode: str) -> Any:
    """Looks the batch's distinct ids up and builds the bags' output through _Rows, on the
    module's device and in its dtype: the rows are moved there once, their gradients back (as
    float32 on the CPU, what the wire carries) once."""
    table, dim = module.table, module.dim
    on = {"device": module.device, "dtype": module.dtype}
    ids_np = bags.ids.numpy()
    distinct, inverse_np, counts = np.unique(ids_np, return_inverse=True, return_counts=True)
    rows_np = ctx.lookup(table, distinct) if len(distinct) else np.zeros((0, dim), np.float32)
    if rows_np.shape[1] != dim:
        raise ClientError(
            codes.CLIENT_SHAPE_MISMATCH,
            f"table {table}: its rows have dim {rows_np.shape[1]}, the module was built for {dim}",
        )
    rows = torch.from_numpy(np.ascontiguousarray(rows_np)).to(**on)
    inverse = torch.from_numpy(inverse_np.reshape(-1).astype(np.int64)).to(module.device)
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
        flat = torch.as_tensor(ids).cpu()
        if flat.dtype.is_floating_point or flat.dtype == torch.bool:
            raise ValueError(f"ids: integer ids expected, got {flat.dtype}")
        shape = tuple(flat.shape)
        n = flat.numel()
        bags = Bags(flat.reshape(-1).to(torch.int64), torch.arange(n, dtype=torch.int64), n, None)
        return _bag_forward(ctx, self, bags, "sum").reshape(*shape, self.dim)


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
        bags = bags_of(input, offsets, per_sample_weights, self.include_last_offset)
        return _bag_forward(ctx, self, bags, self.mode)

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
