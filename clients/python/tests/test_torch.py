"""pserver_client.torch on a real cluster (local-cluster CLI): remote embeddings trained by the
tables' row optimizers, and a dense module trained through RemoteParameters, each equal to the
same PyTorch model trained locally with the same torch.optim optimizer, step by step.

The server's rules and PyTorch's are the same formulas: row Adagrad is a += g²; w −= η·g /
(sqrt(a) + ε) (table.proto; libs/optimizer/src/rows/row-kernels.ts), torch.optim.Adagrad with
initial_accumulator_value = the table's initial_accumulator and lr_decay 0; the dense Adam folds the
bias corrections into the step size and ε (libs/optimizer/src/kernels/reference-kernels.ts: lr ·
sqrt(1−β2ᵗ)/(1−β1ᵗ) and ε · sqrt(1−β2ᵗ)), which is torch.optim.Adam's update rearranged. So the
expected values are torch's own, compared at float32 tolerance."""

import copy

import numpy as np
import pytest
import torch

import pserver_client
from pserver_client.torch import RemoteEmbedding, RemoteEmbeddingBag, RemoteParameters

pytestmark = pytest.mark.integration

ROWS = 24  # ids 0..23
DIM = 6
STEPS = 4
TOLERANCE = dict(rtol=1e-5, atol=1e-6)

ROW_OPTIMIZERS = {
    "sgd": (
        {"sgd": {}, "learning_rate": {"base": 0.1}},
        lambda weights: torch.optim.SGD(weights, lr=0.1),
    ),
    # ε well above the default so that where it is added matters.
    "adagrad": (
        {"adagrad": {"epsilon": 1e-3, "initial_accumulator": 0.1}, "learning_rate": {"base": 0.1}},
        lambda weights: torch.optim.Adagrad(weights, lr=0.1, initial_accumulator_value=0.1, eps=1e-3),
    ),
}


def batches(seed):
    """STEPS batches of bags (1-D ids with offsets) with repeated ids, an empty bag in the middle
    and one at the end, and their targets; and 2-D ids for RemoteEmbedding."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STEPS):
        lengths = rng.integers(1, 5, size=6)
        lengths[2] = lengths[5] = 0
        ids = torch.from_numpy(rng.integers(0, ROWS // 2, size=int(lengths.sum())))
        offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
        target = torch.from_numpy(rng.normal(size=(6, DIM)).astype(np.float32))
        grid = torch.from_numpy(rng.integers(ROWS // 2, ROWS, size=(3, 4)))
        grid_target = torch.from_numpy(rng.normal(size=(3, 4, DIM)).astype(np.float32))
        out.append((ids, offsets, target, grid, grid_target))
    return out


def loss_of(output, target):
    return ((output - target) ** 2).sum()


def local_copy(module, values):
    with torch.no_grad():
        module.weight.copy_(torch.from_numpy(values))
    return module


@pytest.mark.parametrize("rule", sorted(ROW_OPTIMIZERS))
def test_remote_embeddings_train_as_torch_embeddings_with_the_same_optimizer(rule, cluster):
    table_optimizer, local_optimizer = ROW_OPTIMIZERS[rule]
    all_ids = np.arange(ROWS, dtype=np.int64)
    with pserver_client.connect(master=cluster.masters, name=f"torch-{rule}") as client:
        remote = {
            "sum": RemoteEmbeddingBag(client, "bag_sum", DIM, mode="sum"),
            "mean": RemoteEmbeddingBag(client, "bag_mean", DIM, mode="mean"),
            "single": RemoteEmbedding(client, "single", DIM),
        }
        client.init_params(
            {},
            tables=[
                m.table_spec(
                    buckets=16,
                    initializer={"uniform": {"low": -0.5, "high": 0.5}, "seed": 11 + i},
                    optimizer=table_optimizer,
                )
                for i, m in enumerate(remote.values())
            ],
        )
        # The local models start from the rows the tables' initializers give.
        start = {key: client.lookup(m.table, all_ids) for key, m in remote.items()}
        local = {
            "sum": local_copy(torch.nn.EmbeddingBag(ROWS, DIM, mode="sum"), start["sum"]),
            "mean": local_copy(torch.nn.EmbeddingBag(ROWS, DIM, mode="mean"), start["mean"]),
            "single": local_copy(torch.nn.Embedding(ROWS, DIM), start["single"]),
        }
        optimizer = local_optimizer([m.weight for m in local.values()])

        for ids, offsets, target, grid, grid_target in batches(seed=3):
            def fn(ctx):
                loss = (
                    loss_of(remote["sum"](ctx, ids, offsets), target)
                    + loss_of(remote["mean"](ctx, ids, offsets), target)
                    + loss_of(remote["single"](ctx, grid), grid_target)
                )
                loss.backward()  # stages the rows; the step pushes them when fn returns
                return loss.item()

            remote_loss = client.step(fn)
            optimizer.zero_grad()
            local_loss = (
                loss_of(local["sum"](ids, offsets), target)
                + loss_of(local["mean"](ids, offsets), target)
                + loss_of(local["single"](grid), grid_target)
            )
            local_loss.backward()
            optimizer.step()
            assert remote_loss == pytest.approx(local_loss.item(), rel=1e-5)
            for key, m in remote.items():
                np.testing.assert_allclose(
                    client.lookup(m.table, all_ids), local[key].weight.detach().numpy(), **TOLERANCE, err_msg=key
                )
        # Rows the batches never used kept their initial values on both sides (the embeddings'
        # ids are 0..11, the grid's 12..23), and the used ones moved.
        for key, used in (("sum", slice(0, ROWS // 2)), ("single", slice(ROWS // 2, ROWS))):
            after = client.lookup(remote[key].table, all_ids)
            unused = np.ones(ROWS, bool)
            unused[used] = False
            np.testing.assert_array_equal(after[unused], start[key][unused])
            assert not np.allclose(after[used], start[key][used])


DENSE_OPTIMIZERS = {
    "sgd": (
        {"sgd": {}, "learning_rate": {"base": 0.05}},
        lambda params: torch.optim.SGD(params, lr=0.05),
    ),
    "adam": (
        {"adam": {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-3}, "learning_rate": {"base": 0.01}},
        lambda params: torch.optim.Adam(params, lr=0.01, betas=(0.9, 0.999), eps=1e-3),
    ),
}


def mlp():
    torch.manual_seed(5)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


@pytest.mark.parametrize("rule", sorted(DENSE_OPTIMIZERS))
def test_a_module_trained_through_remote_parameters_equals_torch_optim(rule, cluster):
    server_optimizer, local_optimizer = DENSE_OPTIMIZERS[rule]
    rng = np.random.default_rng(9)
    x = torch.from_numpy(rng.normal(size=(16, 4)).astype(np.float32))
    y = torch.from_numpy(rng.normal(size=(16, 1)).astype(np.float32))
    model, local = mlp(), mlp()
    optimizer = local_optimizer(local.parameters())
    with pserver_client.connect(master=cluster.masters, name=f"torch-dense-{rule}") as client:
        params = RemoteParameters(client, model, optimizer=server_optimizer)
        params.init()
        def fn(ctx):
            params.pull(ctx)
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            params.push(ctx)
            return loss.item()

        for _ in range(5):
            remote_loss = client.step(fn)
            optimizer.zero_grad()
            local_loss = ((local(x) - y) ** 2).mean()
            local_loss.backward()
            optimizer.step()
            assert remote_loss == pytest.approx(local_loss.item(), rel=1e-5)
        served = client.get_params(list(params.parameters))
        for name, p in local.named_parameters():
            np.testing.assert_allclose(served[name], p.detach().numpy(), **TOLERANCE, err_msg=name)
        assert not np.allclose(served["0.weight"], mlp()[0].weight.detach().numpy()), "it trained"


def test_embedding_bag_and_dense_head_in_one_push(cluster):
    # A model of a RemoteEmbeddingBag and a dense head: pull, forward, backward, push, as the
    # README's loop; the rows and the head's gradients go out together.
    torch.manual_seed(2)
    head = torch.nn.Linear(DIM, 1)
    local_head = copy.deepcopy(head)
    all_ids = np.arange(ROWS, dtype=np.int64)
    with pserver_client.connect(master=cluster.masters, name="torch-model") as client:
        emb = RemoteEmbeddingBag(client, "features", DIM, mode="mean")
        params = RemoteParameters(client, head, optimizer={"sgd": {}, "learning_rate": {"base": 0.1}}, prefix="head.")
        params.init(tables=[emb.table_spec(optimizer={"sgd": {}, "learning_rate": {"base": 0.1}})])
        local_emb = local_copy(torch.nn.EmbeddingBag(ROWS, DIM, mode="mean"), client.lookup("features", all_ids))
        optimizer = torch.optim.SGD([*local_head.parameters(), local_emb.weight], lr=0.1)
        for ids, offsets, target, _, _ in batches(seed=4):
            y = target[:, :1]

            def fn(ctx):
                params.pull(ctx)
                ((head(emb(ctx, ids, offsets)) - y) ** 2).sum().backward()
                params.push(ctx)

            client.step(fn)
            optimizer.zero_grad()
            ((local_head(local_emb(ids, offsets)) - y) ** 2).sum().backward()
            optimizer.step()
        np.testing.assert_allclose(client.lookup("features", all_ids), local_emb.weight.detach().numpy(), **TOLERANCE)
        served = client.get_params(["head.weight", "head.bias"])
        np.testing.assert_allclose(served["head.weight"], local_head.weight.detach().numpy(), **TOLERANCE)
        np.testing.assert_allclose(served["head.bias"], local_head.bias.detach().numpy(), **TOLERANCE)


def test_a_batch_read_ahead_is_used_and_read_again_after_a_failover(cluster, monkeypatch):
    # Batches read ahead (prefetch) train as torch does when nothing changes in between (the
    # step reads nothing itself); then one is read ahead, shard 0's pserver is killed and
    # replaced, and the step reads its rows again under its own view.
    from pserver_client.step_context import StepContext

    read_in_steps = []
    lookup = StepContext.lookup
    monkeypatch.setattr(StepContext, "lookup", lambda ctx, *a: (read_in_steps.append(ctx.step), lookup(ctx, *a))[1])
    all_ids = np.arange(ROWS, dtype=np.int64)
    sgd = {"sgd": {}, "learning_rate": {"base": 0.1}}
    with pserver_client.connect(master=cluster.masters, name="torch-ahead") as client:
        emb = RemoteEmbeddingBag(client, "ahead", DIM, mode="sum")
        client.init_params(
            {}, tables=[emb.table_spec(initializer={"uniform": {"low": -0.5, "high": 0.5}, "seed": 5}, optimizer=sgd)]
        )
        local_emb = local_copy(torch.nn.EmbeddingBag(ROWS, DIM, mode="sum"), client.lookup("ahead", all_ids))
        optimizer = torch.optim.SGD([local_emb.weight], lr=0.1)

        def train(batch, ids, offsets, target):
            def fn(ctx):
                output = emb(ctx, batch)
                loss_of(output, target).backward()
                return output.detach()

            return client.step(fn)

        for ids, offsets, target, _, _ in batches(seed=5)[:3]:
            # Read ahead, and read before the step begins: the rows are the step's.
            train(emb.prefetch(ids, offsets), ids, offsets, target)
            optimizer.zero_grad()
            loss_of(local_emb(ids, offsets), target).backward()
            optimizer.step()
        assert [step for step in read_in_steps if step > 0] == []
        np.testing.assert_allclose(client.lookup("ahead", all_ids), local_emb.weight.detach().numpy(), **TOLERANCE)

        ids, offsets, target, _, _ = batches(seed=6)[0]
        batch = emb.prefetch(ids, offsets)
        batch._read.result(timeout=30)
        before = cluster.command("serving")["serving"]["0"]["epoch"]
        assert cluster.command("kill-serving 0")["serving"]["0"]["epoch"] > before
        # What the shards serve now (a checkpoint-only failover may have lost the last updates).
        served = local_copy(torch.nn.EmbeddingBag(ROWS, DIM, mode="sum"), client.lookup("ahead", all_ids))
        output = train(batch, ids, offsets, target)
        assert len([step for step in read_in_steps if step > 0]) >= 1
        np.testing.assert_allclose(output.numpy(), served(ids, offsets).detach().numpy(), **TOLERANCE)
