"""checkpoint(): bitwise-equal gradients with the RNG state preserved, a visible mismatch without it."""
import numpy as np
import pytest

import backend.tape as T

from backend.models import presets, validate_spec
from backend.planner.execute import grad_mismatch, record_regions

PRESETS = ["seed-tape", "lab1-mlp", "residual-unit", "deep-mlp", "transformer-tiny"]


@pytest.mark.parametrize("preset", PRESETS)
def test_every_block_checkpointed_gives_bitwise_equal_grads(preset):
    spec = validate_spec(presets.get(preset))
    _, reference = record_regions(spec, [])
    document, grads = record_regions(spec, [[0], list(range(1, len(spec["layers"])))])
    assert all(v == 0.0 for v in grad_mismatch(grads, reference).values())
    assert any(step["phase"] == "recompute" for step in document["steps"])
    assert any(entry["op"] == "checkpoint" and entry["family"] == "checkpoint" for entry in document["tape"])


def test_dropout_without_preserved_rng_state_reports_a_mismatch():
    spec = validate_spec(presets.get("transformer-tiny"))
    _, reference = record_regions(spec, [])
    _, grads = record_regions(spec, [[1], [2]], preserve_rng_state=False)
    mismatch = grad_mismatch(grads, reference)
    assert max(mismatch.values()) > 0.0
    assert mismatch["layers[0].weight"] > 0.0       # the wrong masks reach the embedding too


def _penalized_step(lib, make, checkpoint, checkpointed):
    """A three-layer critic whose middle layer may be checkpointed, trained with WGAN-GP's gradient penalty:
    grad(create_graph) through the region, then a second backward through that and the forward."""
    rng = np.random.default_rng(4)
    x = make(rng.standard_normal((5, 4)))
    w1, w2, w3 = (make(rng.standard_normal(shape)) for shape in ((4, 6), (6, 3), (3, 1)))
    block = lambda h: (h @ w2).tanh()                                                   # noqa: E731
    h = (x @ w1).tanh()
    h = checkpoint(block, h) if checkpointed else block(h)
    loss = (h @ w3).sum()
    (slope,) = lib.autograd.grad(loss, x, create_graph=True) if lib is not T else T.grad(loss, x, create_graph=True)
    assert all(w.grad is None for w in (w1, w2, w3))              # grad() touches no .grad, inside regions too
    (loss + (((slope * slope).sum(-1) ** 0.5 - 1.0) ** 2).mean()).backward()
    return [t.grad.detach().numpy() if hasattr(t.grad, "detach") else np.array(t.grad) for t in (x, w1, w2, w3)]


def test_a_gradient_penalty_through_a_checkpoint_gives_bitwise_the_plain_gradients():
    plain = _penalized_step(T, T.parameter, T.checkpoint, False)
    checkpointed = _penalized_step(T, T.parameter, T.checkpoint, True)
    for ours, reference in zip(checkpointed, plain):
        np.testing.assert_array_equal(ours, reference)
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    theirs = _penalized_step(torch, lambda a: torch.tensor(a, requires_grad=True),
                             lambda fn, h: torch_checkpoint(fn, h, use_reentrant=False), True)
    for ours, reference in zip(checkpointed, theirs):
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_grad_through_a_checkpoint_leaves_the_regions_parameters_alone():
    w = T.parameter(np.array([[2.0, -1.0], [0.5, 1.0]]))
    x = T.parameter(np.array([[1.0, 3.0]]))
    (gx,) = T.grad(T.checkpoint(lambda h: (h @ w).tanh(), x).sum(), x)
    assert w.grad is None                      # the nested sweep hands w's gradient to grad(), which drops it
    expected = (1 - np.tanh(x.data @ w.data) ** 2) @ w.data.T
    np.testing.assert_allclose(gx.data, expected, rtol=1e-14)
