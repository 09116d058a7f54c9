"""pserver_client: the Python trainer client of pserver.

    import pserver_client
    client = pserver_client.connect(master=["10.0.0.2:8000"])
    client.init_params({"w": numpy.zeros(1 << 20, numpy.float32)}, {"adam": {}, "learningRate": {"base": 1e-3}})
    client.step(lambda ctx: ctx.send_grads({"w": gradient(ctx.get_params(["w"])["w"])}))

TLS and tokens: connect(..., tls=pserver_client.TlsOptions(ca=..., cert=..., key=...), token=...),
or connect(..., **pserver_client.load_security(ca_file=..., token_file=...)).

See clients/python/README.md.
"""

from .client import Client, connect, optimizer_config
from .errors import ClientError, Error, PserverError, is_refused, is_retryable, is_stale_view
from .placement import DEFAULT_BLOCK_SIZE, BlockPlacement, fnv1a64, jump_hash, place_tensor, shard_of
from .read_lines import read_lines
from .security import TlsOptions, load_security, open_channel
from .step_context import StepContext
from .tasks import DatasetTask, read_records
from .tensors import ElementType, Param
from .view import ShardRoute, View

__all__ = [
    "BlockPlacement",
    "Client",
    "ClientError",
    "DEFAULT_BLOCK_SIZE",
    "DatasetTask",
    "ElementType",
    "Error",
    "Param",
    "PserverError",
    "ShardRoute",
    "StepContext",
    "TlsOptions",
    "View",
    "connect",
    "fnv1a64",
    "is_refused",
    "is_retryable",
    "is_stale_view",
    "jump_hash",
    "load_security",
    "open_channel",
    "optimizer_config",
    "place_tensor",
    "read_lines",
    "read_records",
    "shard_of",
]
