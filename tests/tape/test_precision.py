"""Mixed precision in the engine: the cast op, autocast's casts and saved copies, and the loss scaler's policy
(against torch.autocast and torch.amp.GradScaler when torch is installed)."""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import autocast, events, parameter, tensor
from backend.tape.ops.precision import dtype_named
from backend.tape.scaler import LossScaler, underflow_fractions


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    values = {"x": rng.uniform(-1, 1, (8, 6)), "w1": rng.normal(0, 0.4, (6, 16)), "b1": rng.normal(0, 0.1, 16),
              "w2": rng.normal(0, 0.4, (16, 3)), "y": rng.normal(0, 1, (8, 3))}
    return {k: v.astype(np.float32) for k, v in values.items()}


def _ours(values, compute):
    params = {k: parameter(values[k], name=k) for k in ("w1", "b1", "w2")}
    x, y = tensor(values["x"]), tensor(values["y"])
    with autocast(compute):
        out = (x @ params["w1"] + params["b1"]).tanh() @ params["w2"]
        loss = T.mse_loss(out, y)
    loss.backward()
    return out, loss, {k: p.grad for k, p in params.items()}


def test_cast_is_a_recorded_copy_whose_vjp_returns_the_source_dtype():
    w = parameter(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), name="w")
    copy = T.cast(w, "float16")
    assert copy.dtype == np.float16 and copy.grad_fn.name() == "ToCopyBackward0"
    assert copy.storage.kind == "weight_copy"           # a parameter's compute copy is its own memory kind
    (copy * 3.0).sum().backward()
    assert w.grad.dtype == np.float32
    np.testing.assert_array_equal(w.grad, np.full((2, 3), 3.0, np.float32))
    activation = T.cast(w * 1.0, "bfloat16")
    assert activation.dtype == dtype_named("bfloat16") and activation.storage.kind == "activation"


@pytest.mark.parametrize("compute", ["float16", "bfloat16"])
def test_autocast_computes_low_keeps_master_grads_float32_and_saves_the_copies(compute):
    values = _mlp()
    saved_kinds = []
    listener = lambda kind, payload: (                                                                   # noqa: E731
        saved_kinds.append(payload["storage"].kind) if kind == events.SAVE else None)
    with events.listening(listener):
        out, loss, grads = _ours(values, compute)
    assert out.dtype == dtype_named(compute) and loss.dtype == np.float32     # mse_loss runs in float32
    assert all(g.dtype == np.float32 for g in grads.values())
    # the second matmul pins w2's low-precision copy for dx; the first needs no dx (x needs no grad), so it pins
    # only x's float16 copy, as torch's would
    assert saved_kinds.count("weight_copy") == 1
    reference = _fp32_grads(values)
    tolerance = 2e-2 if compute == "bfloat16" else 3e-3
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, reference[name], rtol=tolerance * 5, atol=tolerance)
        assert not np.array_equal(grad, reference[name])  # it really ran in low precision


def _fp32_grads(values):
    params = {k: parameter(values[k].astype(np.float64)) for k in ("w1", "b1", "w2")}
    out = (tensor(values["x"].astype(np.float64)) @ params["w1"] + params["b1"]).tanh() @ params["w2"]
    T.mse_loss(out, tensor(values["y"].astype(np.float64))).backward()
    return {k: p.grad for k, p in params.items()}


@pytest.mark.parametrize("compute", ["float16", "bfloat16"])
def test_autocast_matches_torch_autocast(compute):
    torch = pytest.importorskip("torch")
    values = _mlp(3)
    out, loss, grads = _ours(values, compute)
    tp = {k: torch.tensor(values[k], requires_grad=True) for k in ("w1", "b1", "w2")}
    with torch.autocast("cpu", dtype=getattr(torch, compute)):
        t_out = torch.nn.functional.linear(torch.tensor(values["x"]), tp["w1"].T, tp["b1"]).tanh() @ tp["w2"]
        t_loss = torch.nn.functional.mse_loss(t_out, torch.tensor(values["y"]))
    t_loss.backward()
    assert str(t_out.dtype) == f"torch.{compute}" and t_loss.dtype == torch.float32
    tolerance = 2e-2 if compute == "bfloat16" else 2e-3
    np.testing.assert_allclose(out.data.astype(np.float32), t_out.detach().float().numpy(), atol=tolerance * 4)
    for name, grad in grads.items():
        assert tp[name].grad.dtype == torch.float32
        np.testing.assert_allclose(grad, tp[name].grad.numpy(), rtol=tolerance * 5, atol=tolerance)


def _run_scaler(flags, growth_interval):
    """Our scaler over steps whose gradient is finite (False) or holds an inf (True): (scale, stepped) per step."""
    w = parameter(np.array([1.0, 2.0], dtype=np.float32))
    opt = T.SGD([w], lr=0.0)
    scaler = LossScaler("dynamic", growth_interval=growth_interval)
    history = []
    for overflow in flags:
        x = tensor(np.array([np.inf if overflow else 1e-3, 1.0], dtype=np.float32))
        scaler.scale((w * x).sum()).backward()
        stepped = scaler.step(opt)
        scaler.update()
        history.append((float(scaler.scale_value), stepped))
        opt.zero_grad()
    return history


FLAGS = [False] * 5 + [True] + [False] * 3 + [True, True] + [False] * 7


def test_dynamic_scaler_grows_after_clean_steps_and_backs_off_on_inf():
    history = _run_scaler(FLAGS, growth_interval=3)
    scales = [s for s, _ in history]
    assert scales[:6] == [65536.0, 65536.0, 131072.0, 131072.0, 131072.0, 65536.0]    # ×2 after 3 clean, ÷2 on inf
    assert scales[8] == 131072.0 and scales[9] == 65536.0 and scales[10] == 32768.0   # the counter was reset
    assert [stepped for _, stepped in history] == [not f for f in FLAGS]              # inf steps are skipped


def test_scaler_matches_torch_grad_scaler():
    torch = pytest.importorskip("torch")
    history = _run_scaler(FLAGS, growth_interval=3)
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = torch.optim.SGD([w], lr=1.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16, growth_interval=3)
    for (scale, stepped), overflow in zip(history, FLAGS):
        before = w.detach().clone()
        x = torch.tensor([float("inf") if overflow else 1e-3, 1.0])
        scaler.scale((w * x).sum()).backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == scale
        assert (not torch.equal(before, w.detach())) == stepped
        opt.zero_grad()


def test_fixed_scale_never_moves_and_none_is_one():
    fixed, none = LossScaler(1024.0), LossScaler("none")
    fixed.found_inf = True
    fixed.update()
    assert float(fixed.scale_value) == 1024.0 and float(none.scale_value) == 1.0
    loss = tensor(np.float32(2.0))
    assert none.scale(loss) is loss


def test_unscale_divides_exactly_and_measures_underflow():
    w = parameter(np.ones(4, dtype=np.float32))
    scaler = LossScaler("dynamic")
    g = np.array([1e-9, 2e-8, 1e-3, 0.0], dtype=np.float32)      # below fp16's smallest subnormal (6e-8) twice
    scaler.scale((w * tensor(g)).sum()).backward()
    seen = []
    with events.listening(lambda kind, payload: seen.append(payload["underflow"]) if kind == events.UNSCALE else None):
        scaler.unscale_([w])
    np.testing.assert_array_equal(w.grad, g)                      # ×2⁻¹⁶ undoes ×2¹⁶ exactly
    assert seen == [{"unscaled": 0.5, "scaled": 0.0}]
    assert underflow_fractions(g, 1.0) == {"unscaled": 0.5, "scaled": 0.5}


def _checkpointed(values, compute, checkpointed, dtypes=None):
    """The _mlp model under autocast with its first layer (and a second use of w2 outside it) in a checkpoint
    region: the recompute must run in `compute`, and a parameter cast inside the region must not lend its
    history-less copy to a recorded use outside."""
    params = {k: parameter(values[k], name=k) for k in ("w1", "b1", "w2")}
    x, y = tensor(values["x"]), tensor(values["y"])

    def region(h):
        out = (h @ params["w1"] + params["b1"]).tanh()
        if dtypes is not None:
            dtypes.append(out.dtype)
        return out

    with autocast(compute):
        hidden = T.checkpoint(region, x) if checkpointed else region(x)
        loss = T.mse_loss(hidden @ params["w2"], y) + (params["w2"] @ params["w2"].T).sum() * 1e-3
    loss.backward()
    return {k: p.grad for k, p in params.items()}


@pytest.mark.parametrize("compute", ["float16", "bfloat16"])
def test_checkpoint_under_autocast_recomputes_in_the_compute_dtype(compute):
    values = _mlp(5)
    dtypes = []
    plain, checkpointed = _checkpointed(values, compute, False), _checkpointed(values, compute, True, dtypes)
    assert dtypes == [dtype_named(compute)] * 2       # the forward and the recompute both ran low
    for name in plain:                                # bitwise, as torch's plain and checkpointed runs are
        np.testing.assert_array_equal(checkpointed[name], plain[name], err_msg=name)


@pytest.mark.parametrize("compute", ["float16", "bfloat16"])
def test_checkpoint_under_autocast_matches_torch(compute):
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    values = _mlp(5)
    ours = _checkpointed(values, compute, True)

    def torch_grads(checkpointed):
        tp = {k: torch.tensor(values[k], requires_grad=True) for k in ("w1", "b1", "w2")}
        region = lambda h: torch.nn.functional.linear(h, tp["w1"].T, tp["b1"]).tanh()      # noqa: E731
        with torch.autocast("cpu", dtype=getattr(torch, compute)):
            x = torch.tensor(values["x"])
            hidden = torch_checkpoint(region, x, use_reentrant=False) if checkpointed else region(x)
            loss = (torch.nn.functional.mse_loss(hidden @ tp["w2"], torch.tensor(values["y"]))
                    + (tp["w2"] @ tp["w2"].T).sum() * 1e-3)
        loss.backward()
        return {k: p.grad.numpy() for k, p in tp.items()}

    plain, checkpointed = torch_grads(False), torch_grads(True)
    tolerance = 2e-2 if compute == "bfloat16" else 2e-3
    for name, grad in ours.items():
        np.testing.assert_array_equal(checkpointed[name], plain[name])      # the oracle's own claim
        np.testing.assert_allclose(grad, checkpointed[name], rtol=tolerance * 5, atol=tolerance)


def test_a_parameter_cast_inside_a_checkpoint_region_keeps_its_gradient_from_a_use_outside():
    values = _mlp(7)
    grads = []
    for checkpointed in (False, True):
        w = parameter(values["w1"][:, :6].copy(), name="w")       # 6×6: used inside the region and after it
        x = tensor(values["x"])
        with autocast("float16"):
            region = lambda h: (h @ w).tanh()                      # noqa: E731
            hidden = T.checkpoint(region, x) if checkpointed else region(x)
            (hidden @ w).sum().backward()
        grads.append(w.grad)
    assert grads[1] is not None                # the region's uncached cast once left the later use history-less
    # Not bitwise (3.0e-4 relative): torch's region and outside use share one cached float16 copy and sum their
    # float16 gradients there; our region's recompute casts w afresh, so the two meet in float32 at w.
    np.testing.assert_allclose(grads[1], grads[0], rtol=2e-3, atol=2e-3)


def test_tanh_backward_in_float16_rounds_once_as_torchs_kernel_does():
    """torch's tanh_backward computes g·(1 − y²) in float32 and rounds once; float16 arithmetic step by step
    gives 0.08172607 and 1.2402344 here (torch: 0.08184814, 1.2412109)."""
    x = parameter(np.arctanh(np.array([0.8974609375, -0.376220703125], dtype=np.float16).astype(np.float64)))
    with autocast("float16"):
        low = T.cast(x, "float16")
        y = low.tanh()
        np.testing.assert_array_equal(y.data, np.array([0.8974609375, -0.376220703125], dtype=np.float16))
        (slope,) = T.grad(y, low, grad_outputs=tensor(np.array([0.420654296875, 1.4453125], dtype=np.float16)))
    np.testing.assert_array_equal(slope.data, np.array([0.08184814453125, 1.2412109375], dtype=np.float16))


@pytest.mark.parametrize("compute", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_tanh_and_sigmoid_in_low_precision_are_bitwise_torchs(op, compute):
    """Forward and backward on 4,096 values against torch's CPU kernels: float32 'opmath' rounded once, except
    sigmoid_backward in float16, which torch computes in float16 as g·(1 − y)·y."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x32 = rng.uniform(-3, 3, 4096).astype(np.float32)
    g32 = rng.uniform(-2, 2, 4096).astype(np.float32)
    low = T.cast(parameter(x32), compute)
    out = getattr(low, op)()
    (slope,) = T.grad(out, low, grad_outputs=tensor(g32.astype(dtype_named(compute))))
    x_t = torch.tensor(x32).to(getattr(torch, compute)).requires_grad_()
    out_t = getattr(x_t, op)()
    (slope_t,) = torch.autograd.grad(out_t, x_t, torch.tensor(g32).to(getattr(torch, compute)))
    np.testing.assert_array_equal(out.data.astype(np.float32), out_t.detach().float().numpy())
    np.testing.assert_array_equal(slope.data.astype(np.float32), slope_t.float().numpy())


def test_a_parameter_used_twice_under_float16_autocast_has_torchs_gradient_bitwise():
    """The '2e-3 on a shared parameter' was tanh's backward rounding three times in float16 (torch: once)."""
    torch = pytest.importorskip("torch")
    values = _mlp(7)
    w = parameter(values["w1"][:, :6].copy(), name="w")
    w_t = torch.tensor(values["w1"][:, :6].copy(), requires_grad=True)
    with autocast("float16"):
        ((tensor(values["x"]) @ w).tanh() @ w).sum().backward()
    with torch.autocast("cpu", dtype=torch.float16):
        ((torch.tensor(values["x"]) @ w_t).tanh() @ w_t).sum().backward()
    np.testing.assert_array_equal(w.grad, w_t.grad.numpy())
