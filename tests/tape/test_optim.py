"""SGD (momentum, nesterov, weight decay), Adam (L2 weight decay) and AdamW against torch.optim over 20 steps.

Every configuration also has literal expected values (taken from torch.optim 2.13 in float64), so the test
runs without torch; with torch installed, each step's parameters are compared with it directly.
"""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import SGD, Adam, AdamW, parameter, tensor

STEPS = 20
CONFIGS = {
    "sgd": (SGD, {"lr": 0.1}),
    "sgd-momentum": (SGD, {"lr": 0.05, "momentum": 0.9}),
    "sgd-momentum-decay-dampening": (SGD, {"lr": 0.05, "momentum": 0.8, "dampening": 0.1, "weight_decay": 0.01}),
    "sgd-nesterov": (SGD, {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001}),
    "adam": (Adam, {"lr": 0.01}),
    "adam-l2": (Adam, {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    "adamw-defaults": (AdamW, {}),
    "adamw": (AdamW, {"lr": 0.01, "betas": (0.85, 0.995), "weight_decay": 0.1}),
}
# (loss at step 2, loss at step 20, w2[0, 0] after 20 steps), from torch.optim with the same model and data.
EXPECTED = {
    "sgd": (0.8072941927870114, 0.44724345788425685, -0.07135257592138725),
    "sgd-momentum": (0.830579015082044, 0.2953211830477967, 0.08931064974982675),
    "sgd-momentum-decay-dampening": (0.8305017289415676, 0.3273847693886553, -0.00309852788493244),
    "sgd-nesterov": (0.8095567799321308, 0.2851102949009944, 0.12141715433781483),
    "adam": (0.8280545376993659, 0.5317266778958768, -0.05597959275579627),
    "adam-l2": (0.8294156666760336, 0.5546374307029225, 0.01385041918779403),
    "adamw-defaults": (0.8522526493935205, 0.8056554845724837, -0.14380995624401416),
    "adamw": (0.8279025989731881, 0.5296629226639165, -0.0349211442863525),
}


def initial_values():
    rng = np.random.default_rng(11)
    return {"x": rng.uniform(-1, 1, (8, 3)), "y": rng.normal(0, 1, (8, 2)),
            "w1": rng.normal(0, 0.5, (3, 5)), "b1": rng.normal(0, 0.1, 5),
            "w2": rng.normal(0, 0.5, (5, 2)), "b2": np.zeros(2)}


def run_ours(name):
    """Losses and each step's parameters (a copy) over STEPS steps of a tanh MLP with MSE, float64."""
    make, options = CONFIGS[name]
    values = initial_values()
    x, y = tensor(values["x"]), tensor(values["y"])
    params = {key: parameter(values[key].copy(), name=key) for key in ("w1", "b1", "w2", "b2")}
    optimizer = make(list(params.values()), **options)
    losses, history = [], []
    for _ in range(STEPS):
        optimizer.zero_grad()
        hidden = (x @ params["w1"] + params["b1"]).tanh()
        loss = T.mse_loss(hidden @ params["w2"] + params["b2"], y)
        loss.backward()
        optimizer.step()
        losses.append(float(np.asarray(loss.data)))
        history.append({key: p.data.copy() for key, p in params.items()})
    return losses, history


def run_torch(torch, name):
    make, options = CONFIGS[name]
    values = initial_values()
    x, y = torch.tensor(values["x"]), torch.tensor(values["y"])
    params = {key: torch.tensor(values[key], requires_grad=True) for key in ("w1", "b1", "w2", "b2")}
    optimizer = getattr(torch.optim, make.__name__)(list(params.values()), **options)
    losses, history = [], []
    for _ in range(STEPS):
        optimizer.zero_grad()
        hidden = torch.tanh(x @ params["w1"] + params["b1"])
        loss = torch.nn.functional.mse_loss(hidden @ params["w2"] + params["b2"], y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        history.append({key: p.detach().numpy().copy() for key, p in params.items()})
    return losses, history


@pytest.mark.parametrize("name", list(CONFIGS))
def test_twenty_steps_give_torchs_literal_values(name):
    losses, history = run_ours(name)
    second, last, w2 = EXPECTED[name]
    np.testing.assert_allclose([losses[1], losses[-1], history[-1]["w2"][0, 0]], [second, last, w2], rtol=1e-10)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_step_matches_torch_optim(name):
    torch = pytest.importorskip("torch")
    ours_losses, ours = run_ours(name)
    theirs_losses, theirs = run_torch(torch, name)
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=1e-11)
    for step, (mine, reference) in enumerate(zip(ours, theirs)):
        for key in mine:
            np.testing.assert_allclose(mine[key], reference[key], rtol=1e-10, atol=1e-13, err_msg=f"{key} at step {step + 1}")


def test_adamw_defaults_are_torchs():
    optimizer = AdamW([parameter(np.ones(2))])
    assert (optimizer.lr, optimizer.betas, optimizer.eps, optimizer.weight_decay) == (1e-3, (0.9, 0.999), 1e-8, 1e-2)
    adam, sgd = Adam([parameter(np.ones(2))]), SGD([parameter(np.ones(2))])
    assert (adam.lr, adam.weight_decay, sgd.lr, sgd.momentum, sgd.weight_decay) == (1e-3, 0.0, 1e-3, 0.0, 0.0)


def step_once(optimizer, params):
    sum(((p * p).sum() for p in params[1:]), (params[0] * params[0]).sum()).backward()
    optimizer.step()


@pytest.mark.parametrize("make,names", [
    (lambda ps: SGD(ps, lr=0.1, momentum=0.9), ["momentum_buffer"]),
    (lambda ps: Adam(ps, weight_decay=0.1), ["m", "v"]),
    (lambda ps: AdamW(ps), ["m", "v"]),
])
def test_state_is_optimizer_memory_allocated_at_the_first_step(make, names):
    params = [parameter(np.ones((2, 3)), name="w"), parameter(np.ones(4), name="b")]
    optimizer = make(params)
    assert optimizer.state == {}                          # torch allocates state lazily, and so do we
    step_once(optimizer, params)
    assert sorted(optimizer.state) == [0, 1]
    for index, p in enumerate(params):
        for key in names:
            buffer = optimizer.state[index][key]
            assert isinstance(buffer, T.Tensor) and buffer.storage.kind == "optimizer"
            assert buffer.shape == p.shape and buffer.storage.nbytes == p.data.nbytes
            assert buffer.name.startswith(p.name + ".")
    first = {i: {k: optimizer.state[i][k] for k in names} for i in optimizer.state}
    optimizer.zero_grad()
    step_once(optimizer, params)
    assert all(optimizer.state[i][k] is first[i][k] for i in first for k in names)     # updated in place


def test_sgd_without_momentum_keeps_no_state_and_first_momentum_step_is_plain_sgd():
    plain, heavy = parameter(np.array([1.0, -2.0])), parameter(np.array([1.0, -2.0]))
    sgd, momentum = SGD([plain], lr=0.5), SGD([heavy], lr=0.5, momentum=0.9)
    for optimizer, p in ((sgd, plain), (momentum, heavy)):
        step_once(optimizer, [p])
    assert sgd.state == {}
    np.testing.assert_array_equal(plain.data, [0.0, 0.0])      # p − 0.5·2p
    np.testing.assert_array_equal(heavy.data, [0.0, 0.0])      # buf = g on the first step
    np.testing.assert_array_equal(momentum.state[0]["momentum_buffer"].data, [2.0, -4.0])


def test_a_parameter_backward_never_reached_is_not_decayed_nor_given_state():
    used, unused = parameter(np.ones(2)), parameter(np.ones(2))
    optimizer = AdamW([used, unused], lr=0.1, weight_decay=0.5)
    (used * used).sum().backward()
    optimizer.step()
    assert list(optimizer.state) == [0]
    np.testing.assert_array_equal(unused.data, [1.0, 1.0])


@pytest.mark.parametrize("make,message", [
    (lambda ps: SGD(ps, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda ps: SGD(ps, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda ps: SGD(ps, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda ps: Adam(ps, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda ps: AdamW(ps, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
])
def test_bad_hyperparameters_raise_torchs_errors(make, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        make([parameter(np.ones(2))])
