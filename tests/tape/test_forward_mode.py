"""Forward mode: every op's jvp against finite differences and against its vjp, jvp/jacobian through views,
in-place ops and checkpoints, forward mode's memory, and the matrix-chain figures.

The cases are test_gradcheck_ops.CASES, which must name every registered op: an op added without a jvp has a
case here that fails (the dispatcher calls the jvp its entry declares).
"""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import OPS, Tensor, events, jacobian, jvp, parameter, tensor
from backend.tape.chain_cost import chain_multiply_adds
from backend.tape.views import AS_STRIDED, ViewOf
from tests.tape.test_gradcheck_ops import CASES

CASE_IDS = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


def _floats(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.data.dtype.kind == "f"]


def _fresh(inputs, requires_grad=False):
    return [tensor(t.data.copy(), requires_grad=requires_grad) if isinstance(t, Tensor) else t for t in inputs]


def _along(fn, inputs, index):
    """fn as a function of input `index` alone; the others are constants (they carry no tangent)."""
    def of_one(x):
        args = list(inputs)
        args[index] = x
        return fn(*args)
    return of_one


def _directional_difference(fn, x, direction, eps=1e-6):
    with T.no_grad():
        plus = fn(tensor(x + eps * direction)).data
        minus = fn(tensor(x - eps * direction)).data
    return (plus - minus) / (2 * eps)


def test_every_op_has_a_jvp_and_a_case():
    assert set(CASES) == set(OPS), f"ops without a case: {sorted(set(OPS) - set(CASES))}"
    missing = sorted(name for name, op in OPS.items() if not callable(op.jvp))
    assert not missing, f"ops without a jvp: {missing}"


@pytest.mark.parametrize("op_name,index", CASE_IDS)
def test_jvp_matches_finite_differences(op_name, index):
    fn, template = CASES[op_name][index]
    inputs = _fresh(template)
    rng = np.random.default_rng(hash((op_name, index)) % 2**32)
    for position in _floats(inputs):
        direction = rng.standard_normal(inputs[position].shape)
        along = _along(fn, inputs, position)
        out, tangent = jvp(along, (inputs[position],), (direction,))
        assert tangent.shape == out.shape and tangent.dtype == out.dtype
        numeric = _directional_difference(along, inputs[position].data, direction)
        np.testing.assert_allclose(tangent.data, numeric, rtol=1e-5, atol=1e-7,
                                   err_msg=f"jvp of {op_name} case {index} along input {position}")


@pytest.mark.parametrize("op_name,index", CASE_IDS)
def test_jvp_and_vjp_are_adjoint(op_name, index):
    """⟨vjp(u), v⟩ = ⟨u, jvp(v)⟩ for random u, v, input by input."""
    fn, template = CASES[op_name][index]
    rng = np.random.default_rng(hash((op_name, index, "adjoint")) % 2**32)
    recorded = _fresh(template, requires_grad=True)
    out = fn(*recorded)
    u = rng.standard_normal(out.shape)
    out.backward(u)
    for position in _floats(template):
        v = rng.standard_normal(template[position].shape)
        constants = _fresh(template)
        _, tangent = jvp(_along(fn, constants, position), (constants[position],), (v,))
        grad = recorded[position].grad
        left = 0.0 if grad is None else float(np.sum(np.asarray(grad) * v))
        right = float(np.sum(u * tangent.data))
        assert left == pytest.approx(right, rel=1e-9, abs=1e-12), f"{op_name} case {index}, input {position}"


def test_as_strided_jvp_is_its_view_of_the_tangent():
    """AsStrided is only recorded (a view's regenerated history), never dispatched in forward mode: check it directly."""
    view = ViewOf((3, 4), ((OPS["getitem"], {"key": (slice(1, None), slice(None, None, 2))}),))
    tangent = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(AS_STRIDED.jvp((tangent,), None, {"view": view}), tangent[1:, ::2])


def test_checkpoint_jvp_says_the_region_runs_instead():
    with pytest.raises(RuntimeError, match="checkpoint is never dispatched"):
        OPS["checkpoint"].jvp((None,), None, {})


# ============================== the sweep itself ==============================

def test_a_jvp_sweep_records_nothing_and_saves_nothing():
    rng = np.random.default_rng(0)
    w1, w2 = parameter(rng.standard_normal((5, 8))), parameter(rng.standard_normal((8, 3)))
    x = tensor(rng.standard_normal((4, 5)))
    kinds = []
    with events.listening(lambda kind, payload: kinds.append(kind)):
        out, tangent = jvp(lambda x: T.log_softmax((x @ w1).tanh() @ w2), (x,), (np.ones((4, 5)),))
    assert out.grad_fn is None and not out.requires_grad
    assert not {events.RECORD, events.SAVE, events.SAVE_RECIPE, events.ALLOC_EXTRA} & set(kinds)
    assert kinds.count(events.OP) == 4                      # one unrecorded step per op
    assert w1.grad is None and w2.grad is None
    # the same forward, recorded, saves both matmuls' inputs and tanh's and log_softmax's outputs
    saved_bytes = []
    with events.listening(lambda kind, payload:
                          saved_bytes.append(payload["storage"].nbytes) if kind == events.SAVE else None):
        T.log_softmax((x @ w1).tanh() @ w2)
    assert sum(saved_bytes) > 0


def test_jvp_leaves_the_callers_tensors_as_they_were():
    x = parameter(np.ones(3))
    _, tangent = jvp(lambda a: a * a, (x,), (np.ones(3),))
    np.testing.assert_array_equal(tangent.data, 2 * np.ones(3))
    assert x.requires_grad and x.grad is None
    plain = x * x                                       # outside the sweep: recorded as usual, no tangent
    assert plain.grad_fn is not None


def test_several_primals_and_outputs():
    a, b = tensor(np.array([1.0, 2.0])), tensor(np.array([3.0, 4.0]))
    (s, p), (ds, dp) = jvp(lambda a, b: (a + b, a * b), (a, b), (np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    np.testing.assert_array_equal(ds.data, [1.0, 1.0])
    np.testing.assert_array_equal(dp.data, [3.0 * 1.0, 2.0 * 1.0])


def test_an_output_independent_of_the_primals_has_a_zero_tangent():
    c = tensor(np.ones(2))
    _, tangent = jvp(lambda a: c * 2.0, (tensor(np.ones(3)),), (np.ones(3),))
    np.testing.assert_array_equal(tangent.data, np.zeros(2))


def test_nested_jvp_raises():
    with pytest.raises(RuntimeError, match="forward-over-forward"):
        jvp(lambda a: jvp(lambda b: b, (a,), (np.ones(2),))[1], (tensor(np.ones(2)),), (np.ones(2),))


def test_tangent_shape_must_match():
    with pytest.raises(ValueError, match="tangent 0 has shape"):
        jvp(lambda a: a, (tensor(np.ones(2)),), (np.ones(3),))


def _views_and_writes(x):
    """Views taken before writes through other views, item assignment and relu_/add_/mul_/zero_."""
    h = x * 1.0
    row, column = h[0], h[:, 1]
    row.mul_(3.0)                    # seen by `column` through the shared base
    h[2] = column[:4] + x[1, :4]     # add saves nothing: the later writes to h are no version error
    h.T[1:3].add_(x[0, 0] * 1.0)
    h[3:].zero_()
    flat = h.reshape(-1)
    flat[:3].relu_()                 # last: relu_ saves its output, a later write would be a version error
    return column[:4] * 1.0 + h.sum(axis=0)


def _chain(x):
    return T.softmax(x.tanh() @ x.T, dim=-1).reshape(-1) * 2.0


CHAIN_FUNCTIONS = {
    "views_and_writes": (_views_and_writes, (5, 4)),
    "chain": (_chain, (3, 4)),
    "checkpointed": (lambda x: T.checkpoint(lambda a: (a.exp() @ a.T).sigmoid(), x) * 1.0, (3, 2)),
    "norm_and_loss": (lambda x: T.cross_entropy(T.layer_norm(x, tensor(np.ones(4)), tensor(np.zeros(4))),
                                                np.array([0, 3, 1])), (3, 4)),
}


def _numeric_jacobian(fn, x, eps=1e-6):
    columns = [_directional_difference(fn, x, basis.reshape(x.shape), eps).reshape(-1)
               for basis in np.eye(x.size)]
    with T.no_grad():
        out_shape = fn(tensor(x)).shape
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


@pytest.mark.parametrize("name", CHAIN_FUNCTIONS)
def test_jacobian_forward_equals_reverse_equals_finite_differences(name):
    fn, shape = CHAIN_FUNCTIONS[name]
    x = tensor(np.random.default_rng(3).uniform(-1, 1, shape))
    forward, reverse = jacobian(fn, x, mode="forward"), jacobian(fn, x, mode="reverse")
    np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(forward, _numeric_jacobian(fn, x.data), rtol=1e-5, atol=1e-7)


def test_checkpoint_under_forward_mode_matches_the_plain_region():
    region = lambda a: (a.exp() @ a.T).sigmoid()          # noqa: E731
    x, v = tensor(np.random.default_rng(1).uniform(-1, 1, (3, 2))), np.ones((3, 2))
    _, plain = jvp(region, (x,), (v,))
    _, checkpointed = jvp(lambda a: T.checkpoint(region, a), (x,), (v,))
    np.testing.assert_array_equal(plain.data, checkpointed.data)


def test_jacobian_of_a_function_that_ignores_its_input_is_zero():
    c = tensor(np.ones(2))
    for mode in ("forward", "reverse"):
        np.testing.assert_array_equal(jacobian(lambda a: c * 1.0, tensor(np.ones(3)), mode=mode), np.zeros((2, 3)))


def test_jacobian_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="'forward' or 'reverse'"):
        jacobian(lambda a: a, tensor(np.ones(2)), mode="sideways")


def test_jacobian_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(3)
    x = rng.uniform(-1, 1, (2, 4))

    def ours(a):
        return T.softmax((a @ tensor(w) + tensor(b)).tanh(), dim=-1) * a[:, :3]

    def theirs(a):
        return torch.softmax(torch.tanh(a @ torch.tensor(w) + torch.tensor(b)), dim=-1) * a[:, :3]

    expected = torch.autograd.functional.jacobian(theirs, torch.tensor(x)).numpy()
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(jacobian(ours, tensor(x), mode=mode), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        jacobian(ours, tensor(x), mode="forward"),
        torch.autograd.functional.jacobian(theirs, torch.tensor(x), strategy="forward-mode", vectorize=True).numpy(),
        rtol=1e-12, atol=1e-14)


# ============================== the matrix-chain lesson ==============================

def test_matrix_chain_figures_of_the_seed():
    costs = chain_multiply_adds([4096, 4096, 4096, 1])
    assert costs["reverse"] == 33_554_432                 # "33.6 million"
    assert costs["forward"] == 68_736_253_952             # "68.7 billion"
    assert costs["cheaper"] == "reverse"
    assert costs["reverse_grouping"] == "(A3·A2)·A1" and costs["forward_grouping"] == "A3·(A2·A1)"


def test_matrix_chain_counts_what_numpy_multiplies():
    """The analytic counts equal the multiply-adds of actually multiplying the chain in each grouping."""
    widths = [2, 3, 4, 5, 6]
    rng = np.random.default_rng(0)
    jacobians = [rng.standard_normal((widths[k], widths[k - 1])) for k in range(1, len(widths))]
    counted = {"forward": 0, "reverse": 0}

    def product(a, b, mode):
        counted[mode] += a.shape[0] * a.shape[1] * b.shape[1]
        return a @ b

    forward = jacobians[0]
    for a in jacobians[1:]:
        forward = product(a, forward, "forward")
    reverse = jacobians[-1]
    for a in reversed(jacobians[:-1]):
        reverse = product(reverse, a, "reverse")
    np.testing.assert_allclose(forward, reverse)
    costs = chain_multiply_adds(widths)
    assert (costs["forward"], costs["reverse"]) == (counted["forward"], counted["reverse"]) == (124, 228)
    assert costs["cheaper"] == "forward"                  # few inputs, many outputs: forward mode wins


def test_matrix_chain_needs_two_jacobians():
    with pytest.raises(ValueError, match="at least three positive widths"):
        chain_multiply_adds([3, 1])


def test_a_wrong_jvp_is_caught():
    from dataclasses import replace
    from backend.tape.dispatch import apply
    wrong = replace(OPS["tanh"], jvp=lambda t, v, attrs: t[0] * (1 + v["out"]))
    x, direction = tensor(np.linspace(-1, 1, 5)), np.ones(5)
    _, tangent = jvp(lambda a: apply(wrong, (a,)), (x,), (direction,))
    numeric = _directional_difference(lambda a: a.tanh(), x.data, direction)
    assert not np.allclose(tangent.data, numeric, rtol=1e-5, atol=1e-7)


def test_an_in_place_write_on_a_view_of_a_fortran_ordered_tensor_keeps_its_tangent():
    def f(a):
        h = a.T + 0.0                   # numpy keeps the transpose's layout: h is Fortran-ordered
        h[0].mul_(2.0)
        return h

    out, tangent = jvp(f, (tensor(np.arange(6.0).reshape(2, 3)),), (np.ones((2, 3)),))
    np.testing.assert_array_equal(out.data, [[0.0, 6.0], [1.0, 4.0], [2.0, 5.0]])
    np.testing.assert_array_equal(tangent.data, [[2.0, 2.0], [1.0, 1.0], [1.0, 1.0]])     # torch's, row 0 doubled
