"""pserver_client: the Python trainer client of pserver.

    import pserver_client
    client = pserver_client.connect(master=["10.0.0.2:8200"])
    client.init_params({"w": numpy.zeros(1 << 20, numpy.float32)}, {"adam": {}, "learning_rate": {"base": 1e-3}})
    client.step(lambda ctx: ctx.send_grads({"w": gradient(ctx.get_params(["w"])["w"])}))

Sparse tables: init_params(..., tables=[{"name": "emb", "dim": 16, ...}]), then in a step
ctx.lookup("emb", ids) and ctx.push_rows("emb", ids, grads).

SYNC and bounded staleness (pservers started with --consistency sync|ssp:<s>): connect(...,
trainer_id=k) with k in 1..N; ctx.send_grads(grads, sample_count=n) returns a PushReport; a step
without data pushes nothing, and the client tells every shard (ctx.skip()).

TLS and tokens: connect(..., tls=pserver_client.TlsOptions(ca=..., cert=..., key=...), token=...),
or connect(..., **pserver_client.load_security(ca_file=..., token_file=...)).

See clients/python/README.md.
"""

from . import codes
from ._version import __version__
from .client import Client, connect, dataset_request, optimizer_config
from .errors import (
    ClientError,
    Error,
    PserverError,
    client_action_of,
    is_refused,
    is_resend_step,
    is_retryable,
    is_shard_unavailable,
    is_stale,
)
from .listing import ParamInfo
from .placement import (
    DEFAULT_BLOCK_SIZE,
    MAX_TABLE_BUCKETS,
    BlockPlacement,
    bucket_of_id,
    buckets_of_ids,
    fnv1a64,
    jump_hash,
    place_tensor,
    shard_of,
    table_shard_of,
    table_shards,
)
from .push_report import PushReport, ShardPush
from .read_lines import read_lines
from .security import TlsOptions, load_security, open_channel
from .step_context import StepContext
from .tables import DEFAULT_TABLE_BUCKETS, TableLayout, table_spec
from .tasks import DatasetTask, read_records
from .tensors import ElementType, Param, TensorSpec
from .view import ShardRoute, View

__all__ = [
    "BlockPlacement",
    "Client",
    "ClientError",
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_TABLE_BUCKETS",
    "DatasetTask",
    "ElementType",
    "Error",
    "MAX_TABLE_BUCKETS",
    "Param",
    "ParamInfo",
    "PserverError",
    "PushReport",
    "ShardPush",
    "ShardRoute",
    "StepContext",
    "TableLayout",
    "TensorSpec",
    "TlsOptions",
    "View",
    "__version__",
    "bucket_of_id",
    "buckets_of_ids",
    "client_action_of",
    "codes",
    "connect",
    "dataset_request",
    "fnv1a64",
    "is_refused",
    "is_resend_step",
    "is_retryable",
    "is_shard_unavailable",
    "is_stale",
    "jump_hash",
    "load_security",
    "open_channel",
    "optimizer_config",
    "place_tensor",
    "read_lines",
    "read_records",
    "shard_of",
    "table_shard_of",
    "table_shards",
    "table_spec",
]
