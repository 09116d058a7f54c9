"""pserver_client.torch without a cluster: the remote embeddings' forward and backward against
torch.nn.EmbeddingBag / Embedding on a local copy of the table (a fake step context that serves
rows from it and records what is staged), their input conventions, RemoteParameters, and the
import error without torch."""

import subprocess
import time
import sys

import numpy as np
import pytest
import torch

from pserver_client import ClientError, codes
from pserver_client.torch import RemoteEmbedding, RemoteEmbeddingBag, RemoteParameters, bags_of
from pserver_client.view import ShardRoute, View
from conftest import CLIENT_ROOT

DIM = 5
ROWS = 30


class FakeContext:
    """A step context over local tables: lookup reads them, push_rows and send_grads record."""

    def __init__(self, tables=None, params=None):
        self.tables = tables or {}
        self.params = params or {}
        self.lookups = []
        self.pushes = []
        self.sent = []
        self.sample_counts = []

    def lookup(self, table, ids):
        ids = np.asarray(ids)
        self.lookups.append((table, ids.copy()))
        return self.tables[table][ids].astype(np.float32)

    def push_rows(self, table, ids, grads, counts=None):
        self.pushes.append((table, np.array(ids), np.array(grads), None if counts is None else np.array(counts)))

    def get_params(self, names):
        return {name: self.params[name].copy() for name in names}

    def send_grads(self, grads, sample_count=None):
        self.sent.append({name: np.array(g) for name, g in grads.items()})
        self.sample_counts.append(sample_count)


def local_table(seed=0):
    return np.random.default_rng(seed).normal(size=(ROWS, DIM)).astype(np.float32)


def random_bags(rng, bags=8, max_len=6):
    """A 1-D batch with offsets, with repeats (ids from a small range) and empty bags."""
    lengths = rng.integers(0, max_len, size=bags)
    lengths[1] = 0  # always an empty bag, and one at the end
    lengths[-1] = 0
    ids = rng.integers(0, 12, size=int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return torch.from_numpy(ids), torch.from_numpy(offsets)


def check_against_local(remote, local, ctx, table, output, expected):
    """The forward outputs agree, and after backward the one staged push holds the batch's
    distinct ids, their counts, and weight.grad's rows for them (every other row's grad is 0)."""
    assert torch.allclose(output, expected, atol=1e-6)
    (name, ids, grads, counts), = ctx.pushes
    assert name == table
    assert list(ids) == sorted(set(ids.tolist())), "distinct ids"
    np.testing.assert_allclose(grads, local.weight.grad.numpy()[ids], atol=1e-6)
    others = np.setdiff1d(np.arange(ROWS), ids)
    assert not local.weight.grad.numpy()[others].any()
    return ids, counts


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_embedding_bag_backward_equals_torch_embedding_bag(mode, seed):
    rng = np.random.default_rng(seed)
    values = local_table(seed)
    ids, offsets = random_bags(rng)
    local = torch.nn.EmbeddingBag(ROWS, DIM, mode=mode)
    with torch.no_grad():
        local.weight.copy_(torch.from_numpy(values))
    ctx = FakeContext({"emb": values})
    remote = RemoteEmbeddingBag(None, "emb", DIM, mode=mode)
    upstream = torch.from_numpy(rng.normal(size=(len(offsets), DIM)).astype(np.float32))

    output = remote(ctx, ids, offsets)
    (output * upstream).sum().backward()
    expected = local(ids, offsets)
    (expected * upstream).sum().backward()

    assert not output[1].any() and not output[-1].any(), "empty bags are zeros"
    distinct, counts = check_against_local(remote, local, ctx, "emb", output, expected)
    assert counts.tolist() == [int((ids == i).sum()) for i in distinct]
    (table, looked_up), = ctx.lookups
    assert looked_up.tolist() == distinct.tolist(), "each distinct id read once"


def test_embedding_bag_per_sample_weights_and_their_gradient():
    rng = np.random.default_rng(7)
    values = local_table(7)
    ids, offsets = random_bags(rng)
    weights = torch.from_numpy(rng.normal(size=len(ids)).astype(np.float32))
    local_w = weights.clone().requires_grad_(True)
    remote_w = weights.clone().requires_grad_(True)
    local = torch.nn.EmbeddingBag(ROWS, DIM, mode="sum")
    with torch.no_grad():
        local.weight.copy_(torch.from_numpy(values))
    ctx = FakeContext({"emb": values})

    output = RemoteEmbeddingBag(None, "emb", DIM)(ctx, ids, offsets, per_sample_weights=remote_w)
    (output**2).sum().backward()
    expected = local(ids, offsets, per_sample_weights=local_w)
    (expected**2).sum().backward()

    check_against_local(None, local, ctx, "emb", output, expected)
    assert torch.allclose(remote_w.grad, local_w.grad, atol=1e-5)
    with pytest.raises(ValueError, match="only for mode 'sum'"):
        RemoteEmbeddingBag(None, "emb", DIM, mode="mean")(ctx, ids, offsets, per_sample_weights=weights)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_2d_input_is_fixed_size_bags(mode):
    values = local_table(4)
    ids = torch.tensor([[1, 2, 2], [0, 3, 1], [4, 4, 4]])
    local = torch.nn.EmbeddingBag(ROWS, DIM, mode=mode)
    with torch.no_grad():
        local.weight.copy_(torch.from_numpy(values))
    ctx = FakeContext({"emb": values})
    output = RemoteEmbeddingBag(None, "emb", DIM, mode=mode)(ctx, ids)
    output.sum().backward()
    expected = local(ids)
    expected.sum().backward()
    _, counts = check_against_local(None, local, ctx, "emb", output, expected)
    assert counts.tolist() == [1, 2, 2, 1, 3]  # ids 0..4


def test_embedding_equals_torch_embedding_for_any_shape_of_ids():
    rng = np.random.default_rng(5)
    values = local_table(5)
    ids = torch.tensor([[3, 1, 3], [7, 3, 0]])
    local = torch.nn.Embedding(ROWS, DIM)
    with torch.no_grad():
        local.weight.copy_(torch.from_numpy(values))
    ctx = FakeContext({"emb": values})
    upstream = torch.from_numpy(rng.normal(size=(2, 3, DIM)).astype(np.float32))

    output = RemoteEmbedding(None, "emb", DIM)(ctx, ids)
    assert output.shape == (2, 3, DIM) and output.dtype == torch.float32
    (output * upstream).sum().backward()
    expected = local(ids)
    (expected * upstream).sum().backward()
    distinct, counts = check_against_local(None, local, ctx, "emb", output, expected)
    assert distinct.tolist() == [0, 1, 3, 7] and counts.tolist() == [1, 1, 3, 1]


def test_no_backward_stages_nothing_and_a_dim_mismatch_is_refused():
    values = local_table()
    ctx = FakeContext({"emb": values})
    with torch.no_grad():
        RemoteEmbedding(None, "emb", DIM)(ctx, torch.tensor([1, 2]))
    RemoteEmbedding(None, "emb", DIM)(ctx, torch.tensor([1, 2]))  # never backpropagated
    assert ctx.pushes == []
    with pytest.raises(ClientError) as caught:
        RemoteEmbedding(None, "emb", DIM + 1)(ctx, torch.tensor([1]))
    assert caught.value.code == codes.CLIENT_SHAPE_MISMATCH


def test_input_conventions_of_embedding_bag():
    # offsets cut a 1-D input; repeated offsets and a last offset at the end are empty bags
    bags = bags_of(torch.tensor([4, 5, 6, 7]), torch.tensor([0, 2, 2, 4]))
    assert bags.count == 4 and bags.bag.tolist() == [0, 0, 2, 2]
    bags = bags_of(torch.tensor([4, 5, 6]), torch.tensor([0, 1, 3]), include_last_offset=True)
    assert bags.count == 2 and bags.bag.tolist() == [0, 1, 1]
    bags = bags_of(np.array([[1, 2], [3, 4]]))  # numpy and lists are taken too
    assert bags.count == 2 and bags.bag.tolist() == [0, 0, 1, 1] and bags.ids.dtype == torch.int64
    assert bags_of(torch.tensor([], dtype=torch.int64), torch.tensor([0, 0])).count == 2
    for args, message in [
        ((torch.tensor([1, 2]),), "offsets: required"),
        ((torch.tensor([[1, 2]]), torch.tensor([0])), "must be None for a 2-D input"),
        ((torch.tensor([1, 2]), torch.tensor([1])), "first offset must be 0"),
        ((torch.tensor([1, 2]), torch.tensor([0, 3])), "non-decreasing and at most"),
        ((torch.tensor([1, 2, 3]), torch.tensor([0, 2, 1])), "non-decreasing"),
        ((torch.tensor([1.0, 2.0]), torch.tensor([0])), "integer ids expected"),
        ((torch.tensor([[[1]]]),), "1-D .* or 2-D expected"),
    ]:
        with pytest.raises(ValueError, match=message):
            bags_of(*args)
    with pytest.raises(ValueError, match="last offset must be the input's length 3"):
        bags_of(torch.tensor([4, 5, 6]), torch.tensor([0, 1]), include_last_offset=True)
    with pytest.raises(ValueError, match="per_sample_weights: shape"):
        bags_of(torch.tensor([1, 2]), torch.tensor([0]), per_sample_weights=torch.ones(3))
    with pytest.raises(ValueError, match="mode: one of"):
        RemoteEmbeddingBag(None, "emb", DIM, mode="max")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_modules_give_their_output_in_the_dtype_and_on_the_device_they_were_made_with(dtype):
    """Rows come as float32 and are moved once into the module's dtype and device; their
    gradients go back as float32 (the wire's), equal to torch's own module (in float64) within
    the dtype's precision."""
    rng = np.random.default_rng(4)
    values = local_table(4)
    ids, offsets = random_bags(rng)
    weights = torch.from_numpy(rng.uniform(0.5, 2.0, size=len(ids))).to(dtype).requires_grad_(True)
    local = torch.nn.EmbeddingBag(ROWS, DIM, mode="sum", dtype=torch.float64)
    with torch.no_grad():
        local.weight.copy_(torch.from_numpy(values))
    local_weights = weights.detach().double().requires_grad_(True)
    ctx = FakeContext({"emb": values})
    remote = RemoteEmbeddingBag(None, "emb", DIM, mode="sum", device="cpu", dtype=dtype)
    upstream = torch.from_numpy(rng.normal(size=(len(offsets), DIM))).to(dtype)

    output = remote(ctx, ids, offsets, per_sample_weights=weights)
    assert (output.dtype, output.device) == (dtype, torch.device("cpu"))
    (output * upstream).sum().backward()
    expected = local(ids, offsets, per_sample_weights=local_weights)
    (expected * upstream.double()).sum().backward()

    tolerance = 1e-12 if dtype == torch.float64 else 0.1
    assert torch.allclose(output.double(), expected, atol=tolerance)
    assert weights.grad.dtype == dtype
    assert torch.allclose(weights.grad.double(), local_weights.grad, atol=tolerance)
    ((_, pushed, grads, _),) = ctx.pushes
    assert grads.dtype == np.float32
    np.testing.assert_allclose(grads, local.weight.grad.numpy()[pushed], atol=tolerance)
    embedding = RemoteEmbedding(None, "emb", DIM, dtype=dtype)
    assert embedding(FakeContext({"emb": values}), ids.reshape(1, -1)).dtype == dtype
    assert f"dtype={dtype}" in repr(embedding)


def test_a_module_refuses_a_dtype_that_is_not_floating_point():
    with pytest.raises(ValueError, match="dtype: a floating-point torch.dtype expected, got torch.int64"):
        RemoteEmbedding(None, "emb", DIM, dtype=torch.int64)


def view_of(epoch):
    """A one-shard view whose shard is at `epoch`."""
    return View(shard_count=1, block_size=1024, shards=(ShardRoute(0, "127.0.0.1:1", epoch, True),))


def step_context(tables, view):
    """A step's context: the tables as they are now, the view the step runs under."""
    ctx = FakeContext(tables)
    ctx.view, ctx.deadline = view, time.monotonic() + 30
    return ctx


class ReadAheadClient:
    """A client whose reads (client._read, numbered step 0) run on a context of their own: the
    tables and the view as they were when the batch was read ahead."""

    def __init__(self, tables, view, fails=False):
        self.ctx = step_context(tables, view)
        self.fails = fails

    def _read(self, fn):
        if self.fails:
            raise ClientError(codes.CLIENT_STEP_FAILED, "the read ahead failed")
        return fn(self.ctx)


def test_a_prefetched_batch_takes_the_rows_read_ahead_when_the_view_is_the_steps():
    rng = np.random.default_rng(5)
    values = local_table(5)
    ids, offsets = random_bags(rng)
    client = ReadAheadClient({"emb": values}, view_of(1))
    remote = RemoteEmbeddingBag(client, "emb", DIM, mode="mean")
    batch = remote.prefetch(ids, offsets)
    # The rows changed after they were read ahead (another trainer's push): the step, under the
    # same view, takes what was read, and reads nothing itself.
    ctx = step_context({"emb": values + 1}, view_of(1))
    output = remote(ctx, batch)
    output.sum().backward()
    plain_ctx = FakeContext({"emb": values})
    expected = RemoteEmbeddingBag(None, "emb", DIM, mode="mean")(plain_ctx, ids, offsets)
    expected.sum().backward()
    assert ctx.lookups == []
    ((_, distinct),) = client.ctx.lookups
    assert distinct.tolist() == sorted(set(ids.tolist()))
    assert torch.equal(output, expected)
    ((_, pushed, grads, counts),) = ctx.pushes
    ((_, plain_pushed, plain_grads, plain_counts),) = plain_ctx.pushes
    assert (pushed.tolist(), counts.tolist()) == (plain_pushed.tolist(), plain_counts.tolist())
    np.testing.assert_array_equal(grads, plain_grads)


@pytest.mark.parametrize("how", ["another view", "a failed read"])
def test_a_prefetched_batch_is_read_again_in_the_step_after(how):
    rng = np.random.default_rng(6)
    values = local_table(6)
    ids, offsets = random_bags(rng)
    client = ReadAheadClient({"emb": values}, view_of(1), fails=how == "a failed read")
    remote = RemoteEmbeddingBag(client, "emb", DIM, mode="sum")
    batch = remote.prefetch(ids, offsets)
    # A pserver failed over since (epoch 2), or the read failed: the step reads the rows itself.
    ctx = step_context({"emb": values + 1}, view_of(2 if how == "another view" else 1))
    output = remote(ctx, batch)
    expected = RemoteEmbeddingBag(None, "emb", DIM, mode="sum")(FakeContext({"emb": values + 1}), ids, offsets)
    ((_, read_in_step),) = ctx.lookups
    assert read_in_step.tolist() == sorted(set(ids.tolist()))
    assert torch.equal(output, expected)


def test_a_prefetched_embedding_keeps_the_ids_shape_and_refuses_what_is_not_its_own():
    values = local_table(7)
    client = ReadAheadClient({"emb": values, "other": values}, view_of(1))
    ids = torch.tensor([[1, 2, 2, 3], [0, 0, 5, 1], [7, 8, 9, 1]])
    remote = RemoteEmbedding(client, "emb", DIM)
    output = remote(step_context({"emb": values}, view_of(1)), remote.prefetch(ids))
    assert output.shape == (3, 4, DIM)
    assert torch.equal(output, torch.from_numpy(values)[ids])
    other = RemoteEmbedding(client, "other", DIM)
    with pytest.raises(ValueError, match="a batch prefetched by table other's module, not emb's"):
        remote(step_context({"emb": values}, view_of(1)), other.prefetch(ids))
    bag = RemoteEmbeddingBag(client, "emb", DIM)
    batch = bag.prefetch(ids)
    with pytest.raises(ValueError, match="give them to prefetch"):
        bag(step_context({"emb": values}, view_of(1)), batch, torch.tensor([0]))


class FakeClient:
    def __init__(self):
        self.inits = []

    def init_params(self, tensors, optimizer=None, tables=()):
        self.inits.append((tensors, optimizer, list(tables)))


def test_remote_parameters_init_pull_and_push():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    client = FakeClient()
    emb = RemoteEmbeddingBag(client, "emb", 8)
    params = RemoteParameters(client, model, optimizer={"sgd": {}, "learning_rate": {"base": 0.1}}, prefix="m.")
    params.init(tables=[emb.table_spec(buckets=64)])
    (tensors, optimizer, tables), = client.inits
    assert sorted(tensors) == ["m.0.bias", "m.0.weight", "m.2.bias", "m.2.weight"]
    assert tensors["m.0.weight"].shape == (4, 3) and tensors["m.0.weight"].dtype == np.float32
    np.testing.assert_array_equal(tensors["m.2.weight"], model[2].weight.detach().numpy())
    assert optimizer == {"sgd": {}, "learning_rate": {"base": 0.1}}
    assert tables == [{"name": "emb", "dim": 8, "buckets": 64}]

    served = {name: np.full(t.shape, 0.5, np.float32) for name, t in tensors.items()}
    ctx = FakeContext(params=served)
    model(torch.ones(2, 3)).sum().backward()  # a gradient left over from an earlier run
    params.pull(ctx)
    assert all(p.grad is None for p in model.parameters()), "pull clears the gradients"
    assert all(bool((p == 0.5).all()) for p in model.parameters())
    out = model[0](torch.ones(2, 3)).sum()  # the last Linear gets no gradient
    out.backward()
    params.push(ctx)
    (sent,) = ctx.sent
    assert sorted(sent) == ["m.0.bias", "m.0.weight"]
    np.testing.assert_array_equal(sent["m.0.weight"], model[0].weight.grad.numpy())
    # The batch's size weighs the push in a SYNC step's mean; unset, the pserver reads 1.
    params.push(ctx, sample_count=2)
    assert ctx.sample_counts == [None, 2]


def test_import_without_torch_names_the_packages(monkeypatch):
    import importlib

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    monkeypatch.delitem(sys.modules, "pserver_client.torch")
    with pytest.raises(ImportError) as caught:
        importlib.import_module("pserver_client.torch")
    assert "apt-get install python3-torch" in str(caught.value)
    assert "pip install pserver-client[torch]" in str(caught.value)


def test_the_package_imports_without_torch():
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "import pserver_client\n"
        "assert 'pserver_client.torch' not in sys.modules\n"
        "try:\n"
        "    import pserver_client.torch\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=CLIENT_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "apt-get install python3-torch" in result.stdout
