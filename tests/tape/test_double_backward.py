"""Double backward: create_graph records the vjps, so a gradient is differentiated again.

Every op's grad-of-grad against finite differences of its first gradient (the cases are test_gradcheck_ops.CASES,
which name every registered op; an op whose vjp cannot be recorded must refuse loudly), a WGAN-GP gradient
penalty through an MLP and a Hessian-vector product against finite differences and torch, HVP
forward-over-reverse against reverse-over-reverse, and torch's errors for the common misuse.
"""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import OPS, Tensor, grad, hvp, parameter, tensor
from backend.tape.node import SECOND_BACKWARD
from tests.tape.test_gradcheck_ops import CASES

CASE_IDS = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


def _floats(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.data.dtype.kind == "f" and t.requires_grad]


def _fresh(inputs):
    return [parameter(t.data.copy()) if isinstance(t, Tensor) and t.requires_grad else t for t in inputs]


def _first_gradient_probe(fn, inputs, seed, probes, create_graph):
    """Σ_j ⟨probe_j, ∂⟨seed, fn(inputs)⟩/∂input_j⟩: a scalar of the first gradient, differentiated again."""
    out = fn(*inputs)
    positions = _floats(inputs)
    firsts = grad(out, [inputs[j] for j in positions], grad_outputs=tensor(seed), create_graph=create_graph,
                  allow_unused=True)
    total = None
    for first, probe in zip(firsts, probes):
        if first is None:
            continue
        term = (first * probe).sum()
        total = term if total is None else total + term
    return total


@pytest.mark.parametrize("op_name,index", CASE_IDS)
def test_grad_of_grad_matches_finite_differences_of_the_first_gradient(op_name, index):
    fn, template = CASES[op_name][index]
    inputs = _fresh(template)
    rng = np.random.default_rng(hash((op_name, index, "double")) % 2**32)
    out_shape = fn(*_fresh(template)).shape
    seed = rng.standard_normal(out_shape)
    positions = _floats(inputs)
    probes = [rng.standard_normal(inputs[j].shape) for j in positions]
    if OPS[op_name].not_recordable:
        with pytest.raises(RuntimeError, match=f"double backward through {op_name} is not supported"):
            _first_gradient_probe(fn, inputs, seed, probes, create_graph=True)
        return
    probe = _first_gradient_probe(fn, inputs, seed, probes, create_graph=True)
    if probe is None or not probe.requires_grad:
        seconds = [None] * len(positions)           # the first gradient does not depend on the inputs
    else:
        seconds = grad(probe, [inputs[j] for j in positions], allow_unused=True)
    for j, second in zip(positions, seconds):
        direction = rng.standard_normal(inputs[j].shape)
        analytic = 0.0 if second is None else float(np.sum(np.asarray(second.data) * direction))
        numeric = _directional_difference(fn, inputs, j, direction, seed, probes)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-6), f"{op_name} case {index}, input {j}"


def _directional_difference(fn, inputs, j, direction, seed, probes, eps=1e-5):
    values = []
    for sign in (1, -1):
        moved = list(_fresh(inputs))
        moved[j] = parameter(inputs[j].data + sign * eps * direction)
        probe = _first_gradient_probe(fn, moved, seed, probes, create_graph=False)
        values.append(0.0 if probe is None else float(probe.data))
    return (values[0] - values[1]) / (2 * eps)


def test_every_op_either_records_its_vjp_or_says_why_not():
    refusing = sorted(name for name, op in OPS.items() if op.not_recordable)
    assert refusing == ["attention", "cross_entropy", "layernorm", "rmsnorm"]
    for name in refusing:
        assert "not on the tape" in OPS[name].not_recordable


# ============================== a gradient penalty through an MLP ==============================

rng = np.random.default_rng(17)
X = rng.standard_normal((6, 4))
WEIGHTS = [rng.standard_normal((4, 8)) * 0.7, rng.standard_normal(8) * 0.1, rng.standard_normal((8, 8)) * 0.5,
           rng.standard_normal(8) * 0.1, rng.standard_normal((8, 8)) * 0.5, rng.standard_normal((8, 1)) * 0.5]
ACTIVATIONS = ("tanh", "relu", "sigmoid")


def _critic(x, params, activate):
    """linear → tanh → linear → relu → linear → sigmoid → linear: one score per row."""
    w1, b1, w2, b2, w3, w4 = params
    h = activate[0](x @ w1 + b1)
    h = activate[1](h @ w2 + b2)
    h = activate[2](h @ w3)
    return h @ w4


def _ours(name):
    return {"tanh": T.tanh, "relu": T.relu, "sigmoid": T.sigmoid}[name]


def _penalty(x, params, create_graph):
    """(‖∂D/∂x‖ − 1)², averaged over the rows: WGAN-GP's penalty."""
    (slope,) = grad(_critic(x, params, [_ours(a) for a in ACTIVATIONS]).sum(), x, create_graph=create_graph)
    norms = ((slope * slope).sum(axis=1)) ** 0.5
    return ((norms - 1.0) ** 2).mean()


def test_gradient_penalty_matches_finite_differences():
    params = [parameter(w.copy()) for w in WEIGHTS]
    x = parameter(X.copy())
    _penalty(x, params, create_graph=True).backward()
    for index, param in enumerate(params):
        direction = rng.standard_normal(param.shape)

        def at(offset):
            moved = [parameter(w.copy()) for w in WEIGHTS]
            moved[index] = parameter(WEIGHTS[index] + offset * direction)
            return float(_penalty(parameter(X.copy()), moved, create_graph=False).data)
        numeric = (at(1e-6) - at(-1e-6)) / 2e-6
        assert float(np.sum(param.grad.data * direction)) == pytest.approx(numeric, rel=1e-6, abs=1e-9)


def test_gradient_penalty_matches_torch():
    torch = pytest.importorskip("torch")
    params = [parameter(w.copy()) for w in WEIGHTS]
    x = parameter(X.copy())
    _penalty(x, params, create_graph=True).backward()

    theirs = [torch.tensor(w, requires_grad=True) for w in WEIGHTS]
    tx = torch.tensor(X, requires_grad=True)
    activate = [getattr(torch, a) for a in ACTIVATIONS]
    (slope,) = torch.autograd.grad(_critic(tx, theirs, activate).sum(), tx, create_graph=True)
    ((slope.norm(dim=1) - 1) ** 2).mean().backward()
    for ours, reference in zip([*params, x], [*theirs, tx]):
        np.testing.assert_allclose(np.asarray(ours.grad.data), reference.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_create_graph_makes_leaf_grads_tensors_with_a_history():
    w = parameter(np.array([0.5, -1.0, 2.0]))
    (w.tanh() ** 3).sum().backward(create_graph=True)
    assert isinstance(w.grad, Tensor) and w.grad.grad_fn is not None
    first = np.array(w.grad.data)
    (second,) = grad(w.grad.sum(), w)
    t = np.tanh(w.data)                                 # d/dw of 3t²(1 − t²), summed
    np.testing.assert_allclose(first, 3 * t ** 2 * (1 - t ** 2), rtol=1e-12)
    np.testing.assert_allclose(second.data, (6 * t - 12 * t ** 3) * (1 - t ** 2), rtol=1e-12)


# ============================== Hessian-vector products ==============================

def _loss(x):
    w1, b1, w2, b2, w3, w4 = [tensor(w) for w in WEIGHTS]
    return (_critic(x, (w1, b1, w2, b2, w3, w4), [T.tanh, T.sigmoid, T.tanh]) ** 2).mean()


def _gradient(x_array):
    x = parameter(x_array)
    (g,) = grad(_loss(x), x)
    return np.asarray(g.data)


V = rng.standard_normal(X.shape)


@pytest.mark.parametrize("mode", ["reverse-over-reverse", "forward-over-reverse"])
def test_hvp_matches_finite_differences_of_the_gradient(mode):
    numeric = (_gradient(X + 1e-6 * V) - _gradient(X - 1e-6 * V)) / 2e-6
    np.testing.assert_allclose(hvp(_loss, X, V, mode=mode), numeric, rtol=1e-6, atol=1e-9)


def test_hvp_forward_over_reverse_equals_reverse_over_reverse():
    np.testing.assert_allclose(hvp(_loss, X, V, mode="forward-over-reverse"),
                               hvp(_loss, X, V, mode="reverse-over-reverse"), rtol=1e-12, atol=1e-15)


def test_hvp_matches_torch():
    torch = pytest.importorskip("torch")
    weights = [torch.tensor(w) for w in WEIGHTS]

    def theirs(x):
        return (_critic(x, weights, [torch.tanh, torch.sigmoid, torch.tanh]) ** 2).mean()
    _, reference = torch.autograd.functional.hvp(theirs, torch.tensor(X), torch.tensor(V))
    np.testing.assert_allclose(hvp(_loss, X, V), reference.numpy(), rtol=1e-9, atol=1e-13)


# ============================== torch's semantics and errors ==============================

def test_an_unused_input_raises_torchs_error_unless_allowed():
    a, b = parameter(np.ones(3)), parameter(np.ones(3))
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph. Set allow_unused=True"):
        grad((a * 2.0).sum(), [a, b])
    ga, gb = grad((a * 2.0).sum(), [a, b], allow_unused=True)
    np.testing.assert_array_equal(ga.data, [2.0, 2.0, 2.0])
    assert gb is None


def test_an_input_that_does_not_require_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        grad(parameter(np.ones(2)).sum(), tensor(np.ones(2)))


def test_a_second_sweep_through_freed_buffers_raises_torchs_error():
    x = parameter(np.array([0.3, -0.2]))
    y = (x.tanh() * x).sum()
    grad(y, x)                                          # no create_graph, no retain_graph: the graph is freed
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        grad(y, x)
    z = x.exp().sum()
    (first,) = grad(z, x, create_graph=True, retain_graph=False)      # the first sweep freed the forward's saves
    with pytest.raises(RuntimeError) as error:
        first.sum().backward()
    assert str(error.value) == SECOND_BACKWARD


def test_grad_leaves_every_dot_grad_alone_and_takes_a_non_leaf_input():
    w = parameter(np.array([[1.0, 2.0], [3.0, 4.0]]))
    x = parameter(np.array([0.5, -0.5]))
    h = x @ w
    (gh, gw) = grad((h.tanh()).sum(), [h, w])
    assert w.grad is None and x.grad is None
    np.testing.assert_allclose(gh.data, 1 - np.tanh(h.data) ** 2)
    np.testing.assert_allclose(gw.data, np.outer(x.data, 1 - np.tanh(h.data) ** 2))


def test_the_second_sweep_frees_what_the_first_kept_only_when_it_is_done():
    x = parameter(np.array([0.3, -0.7, 1.1]))
    y = x.tanh()
    tanh_entry = y.grad_fn
    (first,) = grad(y.sum(), x, create_graph=True)
    assert "out" in tanh_entry.saved                    # create_graph retains the forward's saved values
    recorded = first.grad_fn
    assert recorded.phase == "backward" and tanh_entry.phase == "forward"
    first.sum().backward()
    assert tanh_entry.saved == {} and recorded.saved == {}          # the second sweep released both tapes
    np.testing.assert_allclose(x.grad, -2 * np.tanh(x.data) * (1 - np.tanh(x.data) ** 2), rtol=1e-12)


def test_the_plain_sweep_still_hands_out_arrays():
    w = parameter(np.array([1.0, 2.0]))
    (w * w).sum().backward()
    assert type(w.grad) is np.ndarray


def test_grad_of_several_outputs_sums_their_seeded_gradients():
    x = parameter(np.array([0.2, -0.4]))
    y = x.tanh()
    (twice,) = grad([y, y], x, grad_outputs=[tensor(np.ones(2)), tensor(np.array([2.0, 3.0]))])
    np.testing.assert_allclose(twice.data, np.array([3.0, 4.0]) * (1 - np.tanh(x.data) ** 2), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reverse-over-reverse", "forward-over-reverse"])
@pytest.mark.parametrize("fn", [lambda x: (x * 2.0).sum(), lambda x: x.relu().sum(), lambda x: x.sum(),
                                lambda x: T.tensor(np.ones(3)).sum()], ids=["linear", "relu", "sum", "constant"])
def test_hvp_of_a_gradient_constant_in_x_is_zero(fn, mode):
    """The first gradient does not depend on x (or fn ignores x): H = 0, as torch.autograd.functional.hvp says."""
    product = T.hvp(fn, np.array([0.5, -1.0, 2.0]), np.ones(3), mode=mode)
    np.testing.assert_array_equal(product, np.zeros(3))


def test_double_backward_through_an_in_place_write_on_a_view():
    """relu_ on a transposed view saves its own output, whose history is AsStrided of the written base."""
    def fn(x):
        h = x @ x.T
        view = h.T
        view.relu_()
        return (h * h * h).sum()

    at = np.array([[0.5, -1.0], [2.0, 0.25]])
    direction = np.array([[1.0, 0.5], [-0.25, 2.0]])
    torch = pytest.importorskip("torch")

    def torch_fn(x):
        h = x @ x.T
        h.T.relu_()
        return (h * h * h).sum()

    _, expected = torch.autograd.functional.hvp(torch_fn, torch.tensor(at), torch.tensor(direction))
    for mode in ("reverse-over-reverse", "forward-over-reverse"):
        np.testing.assert_allclose(T.hvp(fn, at, direction, mode=mode), expected.numpy(), rtol=1e-12)


def test_a_relu_gated_gradient_keeps_a_history_whose_derivative_is_zero():
    """torch: grad(relu(x).sum(), x, create_graph=True) is [1, 0, 1] with grad_fn ThresholdBackwardBackward0, and
    differentiating it again gives zeros; a linear program's gradient [2, 2, 2] has none, and a second grad raises."""
    x = parameter(np.array([0.5, -1.0, 2.0]))
    (first,) = grad(x.relu().sum(), x, create_graph=True)
    np.testing.assert_array_equal(first.data, [1.0, 0.0, 1.0])
    assert first.requires_grad and first.grad_fn.name() == "ReluBackwardBackward"
    (second,) = grad((first * tensor(np.array([1.0, 2.0, 3.0]))).sum(), x)
    np.testing.assert_array_equal(second.data, [0.0, 0.0, 0.0])

    y = parameter(np.array([0.5, -1.0, 2.0]))
    (linear,) = grad((y * 2.0).sum(), y, create_graph=True)
    np.testing.assert_array_equal(linear.data, [2.0, 2.0, 2.0])
    assert not linear.requires_grad
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        grad(linear.sum(), y)


def test_a_vjps_array_beside_a_recorded_value_is_a_named_constant_tensor():
    """arrays.like turns a vjp's ndarray into a constant leaf beside a Tensor (relu's backward under create_graph):
    a same-named import once shadowed the constructor, and it handed back the bare array."""
    from backend.tape import arrays
    value = arrays.like(np.zeros(2), T.tensor(np.ones(2)))
    assert isinstance(value, T.Tensor) and value.name == "const"
    assert isinstance(arrays.like(np.zeros(2), np.ones(2)), np.ndarray)
