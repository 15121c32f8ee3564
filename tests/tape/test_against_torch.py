"""Optional: our engine against PyTorch itself (skipped when torch is not installed; the app never imports it).

Two checks: op-by-op values and gradients on random float64 inputs, and the bytes the tape saves for the MLP
presets against what torch.autograd.graph.saved_tensors_hooks packs for the same model (unique storages).
"""
import numpy as np
import pytest

import backend.tape as T
from backend.models import Model, presets, validate_spec
from backend.driver import trace_spec

torch = pytest.importorskip("torch")
F = torch.nn.functional
rng = np.random.default_rng(3)

OPS = {
    "relu": (lambda x: x.relu(), lambda x: x.relu(), [(4, 5)]),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh(), [(4, 5)]),
    "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid(), [(4, 5)]),
    "gelu": (lambda x: T.gelu(x), lambda x: F.gelu(x, approximate="tanh"), [(4, 5)]),
    "softmax": (lambda x: T.softmax(x, dim=-1), lambda x: F.softmax(x, dim=-1), [(3, 6)]),
    "log_softmax": (lambda x: T.log_softmax(x, dim=-1), lambda x: F.log_softmax(x, dim=-1), [(3, 6)]),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "max": (lambda x: x.max(axis=1), lambda x: x.max(dim=1).values, [(3, 6)]),
    "mean": (lambda x: x.mean(axis=0), lambda x: x.mean(dim=0), [(3, 6)]),
    "layer_norm": (lambda x, w, b: T.layer_norm(x, w, b), lambda x, w, b: F.layer_norm(x, (6,), w, b),
                   [(3, 6), (6,), (6,)]),
    "rms_norm": (lambda x, w: T.rms_norm(x, w), lambda x, w: F.rms_norm(x, (6,), w, eps=1e-6), [(3, 6), (6,)]),
    "cross_entropy": (lambda x: T.cross_entropy(x, np.array([1, 0, 5])),
                      lambda x: F.cross_entropy(x, torch.tensor([1, 0, 5])), [(3, 6)]),
    "sdpa_causal": (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [(2, 5, 4), (2, 5, 4), (2, 5, 4)]),
}


@pytest.mark.parametrize("name", list(OPS))
def test_values_and_gradients_match_pytorch(name):
    ours_fn, torch_fn, shapes = OPS[name]
    arrays = [rng.standard_normal(shape) for shape in shapes]
    ours_inputs = [T.parameter(a.copy()) for a in arrays]
    torch_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, theirs = ours_fn(*ours_inputs), torch_fn(*torch_inputs)
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weight = rng.standard_normal(ours.shape)
    (ours * weight).sum().backward()
    (theirs * torch.tensor(weight)).sum().backward()
    for mine, reference in zip(ours_inputs, torch_inputs):
        np.testing.assert_allclose(mine.grad, reference.grad.numpy(), rtol=1e-9, atol=1e-12)


def _torch_forward(spec, params, x, target):
    """The same MLP in torch, layer by layer, from our parameters."""
    def run(layers, h, path):
        for i, layer in enumerate(layers):
            here = f"{path}[{i}]"
            kind = layer["type"]
            if kind == "linear":
                h = h @ params[f"{here}.weight"]
                if layer["bias"]:
                    h = h + params[f"{here}.bias"]
            elif kind in ("relu", "tanh"):
                h = getattr(h, kind)()
            elif kind == "residual":
                h = h + run(layer["layers"], h, f"{here}.layers")
            elif kind == "repeat":
                for j in range(layer["times"]):
                    h = run(layer["layers"], h, f"{here}[{j}]")
        return h
    out = run(spec["layers"], x, "layers")
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
