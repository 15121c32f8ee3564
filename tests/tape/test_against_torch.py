"""Optional: our engine against PyTorch itself (skipped when torch is not installed; the app never imports it).

Three checks: op-by-op values and gradients on random float64 inputs; the bytes the tape saves for the MLP presets
against what torch.autograd.graph.saved_tensors_hooks packs for the same model (unique storages); and when backward
frees each of those saves, against when torch's own backward drops its last pack.
"""
import gc
import itertools
import weakref

import numpy as np
import pytest

import backend.tape as T
from backend.models import Model, presets, validate_spec
from backend.driver import trace_spec
from tests.torch_spec import torch_layers

torch = pytest.importorskip("torch")
F = torch.nn.functional
rng = np.random.default_rng(3)

CAUSAL = np.triu(np.ones((4, 4), dtype=bool), 1)
TOKENS = np.array([[0, 2, 2], [1, 0, 3]])
CE_TARGET = np.array([1, -100, 5, 2])

OPS = {   # name -> (ours, torch's, input shapes); every subset of the inputs requiring grad is checked
    "relu": (lambda x: x.relu(), lambda x: x.relu(), [(4, 5)]),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh(), [(4, 5)]),
    "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid(), [(4, 5)]),
    "exp": (lambda x: x.exp(), lambda x: x.exp(), [(4, 5)]),
    "log": (lambda x: (x * x + 0.5).log(), lambda x: (x * x + 0.5).log(), [(4, 5)]),
    "neg": (lambda x: -x, lambda x: -x, [(4, 5)]),
    "gelu": (lambda x: T.gelu(x), lambda x: F.gelu(x, approximate="tanh"), [(4, 5)]),
    "add_broadcast": (lambda a, b: a + b, lambda a, b: a + b, [(2, 1, 4), (3, 1)]),
    "add_0d": (lambda a, b: a + b, lambda a, b: a + b, [(3,), ()]),
    "sub_broadcast": (lambda a, b: a - b, lambda a, b: a - b, [(1, 4), (3, 1)]),
    "mul_broadcast": (lambda a, b: a * b, lambda a, b: a * b, [(2, 3, 4), (4,)]),
    "mul_0d": (lambda a, b: a * b, lambda a, b: a * b, [(), ()]),
    "div_broadcast": (lambda a, b: a / (b * b + 0.5), lambda a, b: a / (b * b + 0.5), [(3, 1), (1, 4)]),
    "pow_0": (lambda x: x ** 0, lambda x: x ** 0, [(3, 4)]),
    "pow_1": (lambda x: x ** 1, lambda x: x ** 1, [(3, 4)]),
    "pow_3": (lambda x: x ** 3, lambda x: x ** 3, [(3, 4)]),
    "pow_-2": (lambda x: x ** -2, lambda x: x ** -2, [(3, 4)]),
    "softmax": (lambda x: T.softmax(x, dim=-1), lambda x: F.softmax(x, dim=-1), [(3, 6)]),
    "softmax_dim0": (lambda x: T.softmax(x, dim=0), lambda x: F.softmax(x, dim=0), [(3, 6)]),
    "log_softmax": (lambda x: T.log_softmax(x, dim=-1), lambda x: F.log_softmax(x, dim=-1), [(3, 6)]),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "matmul_batched": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    "matmul_mat_vec": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4,)]),
    "matmul_vec_vec": (lambda a, b: a @ b, lambda a, b: a @ b, [(4,), (4,)]),
    "matmul_batch_vec": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4,)]),
    "matmul_vec_batch": (lambda a, b: a @ b, lambda a, b: a @ b, [(4,), (2, 4, 5)]),
    "sum": (lambda x: x.sum(axis=(0, 2)), lambda x: x.sum(dim=(0, 2)), [(2, 3, 4)]),
    "sum_all": (lambda x: x.sum(), lambda x: x.sum(), [(3, 4)]),
    "max": (lambda x: x.max(axis=1), lambda x: x.max(dim=1).values, [(3, 6)]),
    "mean": (lambda x: x.mean(axis=0), lambda x: x.mean(dim=0), [(3, 6)]),
    "layer_norm": (lambda x, w, b: T.layer_norm(x, w, b), lambda x, w, b: F.layer_norm(x, (6,), w, b),
                   [(3, 6), (6,), (6,)]),
    "rms_norm": (lambda x, w: T.rms_norm(x, w), lambda x, w: F.rms_norm(x, (6,), w, eps=1e-6), [(3, 6), (6,)]),
    "embedding": (lambda w: T.embedding(T.tensor(TOKENS), w), lambda w: F.embedding(torch.tensor(TOKENS), w),
                  [(4, 3)]),
    "masked_fill": (lambda x: T.masked_fill(x, T.tensor(CAUSAL), -5.0),
                    lambda x: x.masked_fill(torch.tensor(CAUSAL), -5.0), [(2, 4, 4)]),
    "getitem": (lambda x: x[1:, ::2], lambda x: x[1:, ::2], [(3, 4)]),
    "getitem_0d": (lambda x: x[1, 2], lambda x: x[1, 2], [(3, 4)]),
    "permute": (lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1), [(2, 3, 4)]),
    "reshape": (lambda x: x.T.reshape(-1), lambda x: x.T.reshape(-1), [(3, 4)]),
    "cat": (lambda a, b: T.cat([a, b], dim=1), lambda a, b: torch.cat([a, b], dim=1), [(2, 3), (2, 2)]),
    "cross_entropy": (lambda x: T.cross_entropy(x, np.array([1, 0, 5])),
                      lambda x: F.cross_entropy(x, torch.tensor([1, 0, 5])), [(3, 6)]),
    "cross_entropy_ignore": (lambda x: T.cross_entropy(x, CE_TARGET),
                             lambda x: F.cross_entropy(x, torch.tensor(CE_TARGET)), [(4, 6)]),
    "cross_entropy_smoothing": (lambda x: T.cross_entropy(x, CE_TARGET, label_smoothing=0.15),
                                lambda x: F.cross_entropy(x, torch.tensor(CE_TARGET), label_smoothing=0.15), [(4, 6)]),
    "cross_entropy_in_range_ignore": (
        lambda x: T.cross_entropy(x, CE_TARGET.clip(0), ignore_index=5, label_smoothing=0.3),
        lambda x: F.cross_entropy(x, torch.tensor(CE_TARGET.clip(0)), ignore_index=5, label_smoothing=0.3), [(4, 6)]),
    "cross_entropy_sum": (lambda x: T.cross_entropy(x, CE_TARGET, label_smoothing=0.1, reduction="sum"),
                          lambda x: F.cross_entropy(x, torch.tensor(CE_TARGET), label_smoothing=0.1,
                                                    reduction="sum"), [(4, 6)]),
    "cross_entropy_none": (lambda x: T.cross_entropy(x, CE_TARGET, label_smoothing=0.1, reduction="none"),
                           lambda x: F.cross_entropy(x, torch.tensor(CE_TARGET), label_smoothing=0.1,
                                                     reduction="none"), [(4, 6)]),
    "sdpa": (lambda q, k, v: T.scaled_dot_product_attention(q, k, v),
             lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [(2, 5, 4), (2, 5, 4), (2, 5, 4)]),
    "sdpa_causal": (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [(2, 5, 4), (2, 5, 4), (2, 5, 4)]),
    "sdpa_causal_short_queries": (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True),
                                  lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                  [(2, 3, 4), (2, 6, 4), (2, 6, 3)]),
    "sdpa_causal_long_queries": (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True),
                                 lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                 [(2, 6, 4), (2, 3, 4), (2, 3, 4)]),
}


def _subsets(count):
    return [chosen for size in range(1, count + 1) for chosen in itertools.combinations(range(count), size)]


@pytest.mark.parametrize("name,chosen", [(name, chosen) for name, (_, _, shapes) in OPS.items()
                                         for chosen in _subsets(len(shapes))])
def test_values_and_gradients_match_pytorch(name, chosen):
    ours_fn, torch_fn, shapes = OPS[name]
    arrays = [rng.standard_normal(shape) for shape in shapes]
    ours_inputs = [T.parameter(a.copy()) if i in chosen else T.tensor(a.copy()) for i, a in enumerate(arrays)]
    torch_inputs = [torch.tensor(a, requires_grad=i in chosen) for i, a in enumerate(arrays)]
    ours, theirs = ours_fn(*ours_inputs), torch_fn(*torch_inputs)
    assert type(ours.data) is np.ndarray and ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weight = rng.standard_normal(ours.shape)
    (ours * weight).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for mine, reference in zip(ours_inputs, torch_inputs):
        if reference.requires_grad:
            np.testing.assert_allclose(mine.grad, reference.grad.numpy(), rtol=1e-9, atol=1e-12)
        else:
            assert mine.grad is None


@pytest.mark.parametrize("exponent", [0, 0.0, 1, 2, 3, 0.5, -1, -2, -0.5, 2.5])
def test_pow_edge_cases_match_pytorch_including_nan_and_inf(exponent):
    at = np.array([0.0, -0.0, -2.0, -0.5, 1.5, 2.0])
    x, reference = T.parameter(at.copy()), torch.tensor(at, requires_grad=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = x ** exponent
        y.backward(np.ones(len(at)))
    expected = reference ** exponent
    expected.backward(torch.ones(len(at), dtype=torch.float64))
    # nan and ±inf in the same places; finite values to an ulp or two (torch's AVX-512 kernels round 2 ** 0.5
    # to 1.414213562373095, numpy to 1.4142135623730951)
    np.testing.assert_allclose(y.data, expected.detach().numpy(), rtol=1e-15, atol=0)
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=1e-15, atol=0)


def test_every_target_ignored_matches_pytorch():
    logits = rng.standard_normal((3, 4))
    ours, theirs = T.parameter(logits.copy()), torch.tensor(logits, requires_grad=True)
    loss = T.cross_entropy(ours, [-100, -100, -100], label_smoothing=0.1)
    expected = F.cross_entropy(theirs, torch.tensor([-100, -100, -100]), label_smoothing=0.1)
    loss.backward()
    expected.backward()
    assert np.isnan(loss.item()) and np.isnan(expected.item())
    np.testing.assert_array_equal(ours.grad, theirs.grad.numpy())


@pytest.mark.parametrize("call", [
    lambda lib, z: lib.cross_entropy(z, [0, 1], label_smoothing=1.5),
    lambda lib, z: lib.cross_entropy(z, [0, 1], reduction="avg"),
    lambda lib, z: lib.cross_entropy(z, [0, 7]),
    lambda lib, z: lib.cross_entropy(z, [0, -100], ignore_index=0),
    lambda lib, z: lib.matmul(z.sum(), z[0]),
])
def test_error_text_matches_pytorch(call):
    with pytest.raises(Exception) as theirs:
        call(_TorchF, torch.zeros((2, 3), dtype=torch.float64, requires_grad=True))
    with pytest.raises(theirs.type) as ours:
        call(T, T.parameter(np.zeros((2, 3))))
    assert str(ours.value) == str(theirs.value)


class _TorchF:
    """torch's functions under our names, targets as lists."""
    matmul = staticmethod(torch.matmul)

    @staticmethod
    def cross_entropy(z, target, **options):
        return F.cross_entropy(z, torch.tensor(target), **options)


def _torch_forward(spec, params, x, target):
    """The same MLP in torch, layer by layer, from our parameters."""
    out = torch_layers(torch, spec["layers"], x, params)
    if spec["loss"]["type"] == "sum":
        return out.sum()
    diff = out - target
    return (diff * diff).mean()


@pytest.mark.parametrize("preset", ["seed-tape", "lab1-mlp", "residual-unit", "deep-mlp"])
def test_saved_bytes_match_what_pytorch_packs(preset):
    spec = validate_spec(presets.get(preset))
    model = Model(spec)
    params = {name: torch.tensor(p.data.copy(), requires_grad=True) for name, p in model.params.items()}
    x = torch.tensor(model.input.data.copy())
    target = torch.tensor(model.target.data.copy()) if model.target is not None else None
    packed = {}

    def pack(t):
        packed[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = _torch_forward(spec, params, x, target)
    ours = trace_spec(presets.get(preset), measure=False)
    assert ours["loss"] == pytest.approx(loss.item(), rel=1e-5)
    assert ours["summary"]["saved_bytes"] == sum(packed.values())


def _torch_releases(spec, params, x, target):
    """What torch's own backward frees of the saves, in order: for each node that frees something, the sizes of the
    storages whose last saved reference it dropped (sorted). The packs are weakly watched (saved_tensors_hooks), a
    node's pre-hook says which node runs; parameters, the input and the target stay referenced here, so never freed."""
    running = [None]
    holders = {}                     # storage pointer -> how many packs of it are still held
    freed = []                       # (the node running, storage pointer, nbytes)

    class Held:
        def __init__(self, t):
            self.t = t

    def pack(t):
        storage = t.untyped_storage()
        key, nbytes = storage.data_ptr(), storage.nbytes()
        holders[key] = holders.get(key, 0) + 1
        held = Held(t)

        def dropped():
            holders[key] -= 1
            if holders[key] == 0:
                freed.append((running[0], key, nbytes))
        weakref.finalize(held, dropped)
        return held

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda held: held.t):
        loss = _torch_forward(spec, params, x, target)
    kept = {t.untyped_storage().data_ptr() for t in [*params.values(), x, target] if t is not None}
    nodes, todo = [], [loss.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in nodes:
            continue
        nodes.append(node)
        node.register_prehook(lambda grads, node=node: running.__setitem__(0, node))
        todo.extend(next_node for next_node, _ in node.next_functions)
    ordinal = {}
    loss.backward()
    del loss
    gc.collect()
    by_node = {}
    for node, key, nbytes in freed:
        if key not in kept:          # a parameter's last pack dropped: its storage is the model's, not freed
            by_node.setdefault(ordinal.setdefault(node, len(ordinal)), []).append(nbytes)
    return [sorted(sizes) for _, sizes in sorted(by_node.items())]


def _our_releases(document):
    """The same from our trace: per backward step that frees a saved activation's storage (the last of its tensors
    to be freed), the storages' sizes, sorted."""
    storages = {}
    for tensor in document["tensors"]:
        if tensor["kind"] == "activation":
            storage = storages.setdefault(tensor["storage"], {"nbytes": 0, "freed": -1, "saved": False})
            storage["nbytes"] = max(storage["nbytes"], tensor["nbytes"])
            storage["freed"] = max(storage["freed"], tensor["freed"] if tensor["freed"] is not None else float("inf"))
            storage["saved"] |= bool(tensor["saved_by"])
    by_step = {}
    for storage in storages.values():
        if storage["saved"]:
            by_step.setdefault(storage["freed"], []).append(storage["nbytes"])
    return [sorted(sizes) for _, sizes in sorted(by_step.items())]


@pytest.mark.parametrize("preset", ["seed-tape", "lab1-mlp", "residual-unit", "deep-mlp"])
def test_backward_frees_each_saved_activation_when_torch_does(preset):
    """The release rule, against torch's own backward: a saved tensor's memory goes when the last node that saved it
    has run (residual-unit's block input is saved by two nodes; the loss's difference twice by one)."""
    spec = validate_spec(presets.get(preset))
    model = Model(spec)
    params = {name: torch.tensor(p.data.copy(), requires_grad=True) for name, p in model.params.items()}
    x = torch.tensor(model.input.data.copy())
    target = torch.tensor(model.target.data.copy()) if model.target is not None else None
    theirs = _torch_releases(spec, params, x, target)
    assert theirs, "torch freed nothing: the watch is broken"
    assert _our_releases(trace_spec(presets.get(preset), measure=False)) == theirs


@pytest.mark.parametrize("query_permuted", [True, False], ids=["query-from-heads-split", "contiguous-query"])
def test_fused_attention_lays_out_its_output_as_torch_does(query_permuted):
    """torch's fused SDPA allocates its output like the query: a model's q, k, v ([B, L, H, E] projections seen as
    [B, H, L, E]) give an output whose permute(0, 2, 1, 3).reshape(B, L, H·E) for the projection is a view. Ours
    was always contiguous, so the merge copied: B·L·H·E more saved bytes per attention layer than torch (found by a
    PyTorch-oracle fuzz)."""
    arrays = [rng.normal(size=(2, 5, 3, 4) if query_permuted else (2, 3, 5, 4)) for _ in range(3)]
    ours = [T.tensor(a) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    if query_permuted:
        ours, theirs = [t.permute(0, 2, 1, 3) for t in ours], [t.permute(0, 2, 1, 3) for t in theirs]
    out = T.scaled_dot_product_attention(*ours)
    expected = F.scaled_dot_product_attention(*theirs)
    assert tuple(s // out.data.itemsize for s in out.data.strides) == expected.stride()
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=1e-12)
    merged, merged_t = out.permute(0, 2, 1, 3).reshape(2, 5, 12), expected.permute(0, 2, 1, 3).reshape(2, 5, 12)
    assert (merged.storage is out.storage) == (merged_t.data_ptr() == expected.data_ptr()) == query_permuted
