"""Both modes' Jacobians of a model against each other, finite differences and torch.func.jacfwd / jacrev; the meter's
figures against the engine's own accounting."""
import numpy as np
import pytest

from backend.models import presets, validate_spec
from backend.sweeps.jacobians import forward_mode, reverse_mode
from backend.sweeps.report import modes_report
from backend.sweeps.subject import subject_of, sweep_counts

MLP_PRESETS = ["seed-tape", "lab1-mlp", "residual-unit"]


@pytest.fixture(scope="module", params=MLP_PRESETS)
def report(request):
    spec = validate_spec(presets.get(request.param))
    return spec, modes_report(spec, keep_jacobians=True)


def test_sweep_counts_from_shapes_match_what_ran(report):
    spec, result = report
    counts = sweep_counts(spec)
    assert result["jacobians"]["loss"]["forward"]["sweeps"] == counts["inputs"]
    assert result["jacobians"]["logits"]["reverse"]["sweeps"] == counts["logits"]


def test_jacobian_of_the_loss_matches_finite_differences(report):
    spec, result = report
    subject = subject_of(spec)
    x = subject.x.data.astype(np.float64)
    jacobian = result["jacobians"]["loss"]["arrays"]["reverse"].reshape(-1)
    rng = np.random.default_rng(1)
    eps = 1e-2 if x.dtype == np.float32 or spec["dtype"] == "float32" else 1e-6
    for i in rng.choice(x.size, size=min(8, x.size), replace=False):
        def loss_at(delta):
            moved = x.copy()
            moved.reshape(-1)[i] += delta
            return float(subject.loss(_like(subject.x, moved)).data)
        numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
        assert jacobian[i] == pytest.approx(numeric, rel=2e-2, abs=2e-3)


def _like(template, array):
    from backend.tape import tensor
    return tensor(array.astype(template.dtype))


def test_forward_and_reverse_jacobians_equal_torch_jacfwd_and_jacrev(report):
    torch = pytest.importorskip("torch")
    from torch.func import jacfwd, jacrev
    spec, result = report
    subject = subject_of(spec)
    params = {name: torch.tensor(np.array(p.data), dtype=torch.float64) for name, p in subject.model.params.items()}
    target = None if subject.model.target is None else torch.tensor(np.array(subject.model.target.data), dtype=torch.float64)

    def logits(x):
        return _torch_layers(torch, spec["layers"], "layers", params, x)

    def loss(x):
        out = logits(x)
        return out.sum() if spec["loss"]["type"] == "sum" else ((out - target) ** 2).mean()

    x = torch.tensor(np.array(subject.x.data), dtype=torch.float64)
    tol = 1e-4 if spec["dtype"] == "float32" else 1e-9
    for name, fn in (("loss", loss), ("logits", logits)):
        arrays = result["jacobians"][name]["arrays"]
        for mode, torch_jacobian in (("forward", jacfwd), ("reverse", jacrev)):
            expected = torch_jacobian(fn)(x).reshape(arrays[mode].shape).numpy()
            np.testing.assert_allclose(arrays[mode], expected, rtol=tol, atol=tol, err_msg=f"{name} {mode}")


def _torch_layers(torch, layers, path, params, h):
    """The MLP presets' layers (linear, relu, tanh, residual) in torch, on the engine model's own parameters."""
    for i, layer in enumerate(layers):
        where = f"{path}[{i}]"
        if layer["type"] == "linear":
            h = h @ params[f"{where}.weight"] + (params[f"{where}.bias"] if f"{where}.bias" in params else 0)
        elif layer["type"] in ("relu", "tanh"):
            h = getattr(torch, layer["type"])(h)
        elif layer["type"] == "residual":
            h = h + _torch_layers(torch, layer["layers"], f"{where}.layers", params, h)
        else:
            raise AssertionError(layer["type"])
    return h


def test_forward_mode_holds_no_tape_and_reverse_mode_holds_it_for_every_sweep():
    spec = validate_spec(presets.get("seed-tape"))
    subject = subject_of(spec)
    forward = forward_mode(subject.loss, subject.x, 1)
    reverse = reverse_mode(subject.loss, subject.x, 1)
    assert forward.saved_bytes == 0
    # With only x requiring grad, x@W1 saves W1 [1,64] (for dx), relu its output [64,64], and h@W2 saves W2 [64,1]
    assert reverse.saved_bytes == 64 * 64 * 4 + 64 * 4 + 64 * 4
    assert reverse.sweep_peak_bytes >= reverse.saved_bytes


def test_a_token_model_is_differentiated_at_its_embedded_tokens():
    spec = validate_spec({"batch": 1, "input": {"kind": "tokens", "vocab": 5, "seq": 2},
                          "layers": [{"type": "embedding", "dim": 3}, {"type": "linear", "out": 5}],
                          "loss": {"type": "cross_entropy"}})
    result = modes_report(spec)
    assert result["input"]["shape"] == [1, 2, 3]
    assert result["jacobians"]["loss"]["forward"]["sweeps"] == 6 == sweep_counts(spec)["inputs"]
    assert result["jacobians"]["loss"]["max_abs_difference"] < 1e-6
    assert [s["entry"] for s in result["jvp_sweep"]["steps"]][:2] == [1, 2]     # entry 0 is the embedding


def test_dropout_draws_the_same_mask_in_every_sweep():
    """Each sweep is reseeded: the n JVP sweeps and the one recorded forward differentiate the same function."""
    spec = validate_spec({"batch": 4, "input": {"kind": "features", "size": 3},
                          "layers": [{"type": "linear", "out": 8}, {"type": "dropout", "p": 0.5}, {"type": "tanh"},
                                     {"type": "linear", "out": 2}],
                          "loss": {"type": "mse", "target": "random"}})
    result = modes_report(spec, keep_jacobians=True)
    for name in ("loss", "logits"):
        arrays = result["jacobians"][name]["arrays"]
        np.testing.assert_allclose(arrays["forward"], arrays["reverse"], rtol=1e-5, atol=1e-6)
        assert np.count_nonzero(arrays["reverse"]) > 0
