"""Op edge cases pinned to PyTorch 2.13's values, gradients and error text, as literals (no torch needed).

Issue 11, items 7-9 and cross_entropy's options; tests/tape/test_against_torch.py checks the same against
torch itself when it is installed.
"""
import warnings

import numpy as np
import pytest

import backend.tape as T
from backend.tape import OPS, gradcheck, parameter, tensor

NAN, INF = np.nan, np.inf
POW_AT = np.array([0.0, -2.0, -0.5, 1.5, 2.0])

# exponent -> (x ** p, d(x ** p)/dx) at POW_AT, as torch prints them (nan and inf in the same places)
POW_EXPECTED = {
    0: ([1, 1, 1, 1, 1], [0, 0, 0, 0, 0]),
    0.0: ([1, 1, 1, 1, 1], [0, 0, 0, 0, 0]),
    1: ([0, -2, -0.5, 1.5, 2], [1, 1, 1, 1, 1]),
    2: ([0, 4, 0.25, 2.25, 4], [0, -4, -1, 3, 4]),
    3: ([0, -8, -0.125, 3.375, 8], [0, 12, 0.75, 6.75, 12]),
    0.5: ([0, NAN, NAN, 1.22474487139, 1.41421356237], [INF, NAN, NAN, 0.408248290464, 0.353553390593]),
    -1: ([INF, -0.5, -2, 0.666666666667, 0.5], [-INF, -0.25, -4, -0.444444444444, -0.25]),
    -2: ([INF, 0.25, 4, 0.444444444444, 0.25], [-INF, 0.25, 16, -0.592592592593, -0.25]),
    -0.5: ([INF, NAN, NAN, 0.816496580928, 0.707106781187], [-INF, NAN, NAN, -0.272165526976, -0.176776695297]),
    2.5: ([0, NAN, NAN, 2.75567596063, 5.65685424949], [0, NAN, NAN, 4.59279326772, 7.07106781187]),
}


@pytest.mark.parametrize("exponent", list(POW_EXPECTED), ids=repr)
def test_pow_edge_values_and_gradients_are_pytorchs(exponent):
    x = parameter(POW_AT.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy warns on (−2) ** 0.5; torch does not
        y = x ** exponent
        y.backward(np.ones(5))
    value, grad = POW_EXPECTED[exponent]
    np.testing.assert_allclose(y.data, value, rtol=1e-10)       # assert_allclose: nan == nan, inf == inf
    np.testing.assert_allclose(x.grad, grad, rtol=1e-10)


@pytest.mark.parametrize("exponent,value,grad", [(0.5, -0.0, -INF), (-0.5, -INF, -INF), (-1, -INF, -INF)])
def test_pow_at_negative_zero_keeps_pytorchs_signs(exponent, value, grad):
    """torch computes x ** 0.5 as sqrt and x ** −0.5 as rsqrt: the sign of −0.0 survives."""
    x = parameter(np.array([-0.0]))
    with np.errstate(divide="ignore"):
        y = x ** exponent
        y.backward(np.ones(1))
    assert y.item() == value and np.signbit(y.item()) == np.signbit(value)
    assert x.grad[0] == grad


def test_zero_exponent_gradient_is_zero_even_at_zero():
    x = parameter(np.zeros(3))
    (x ** 0).sum().backward()
    assert np.array_equal(x.grad, np.zeros(3))


def test_numpy_scalar_exponent_keeps_float32():
    assert (tensor(np.ones(3, dtype=np.float32)) ** np.float64(2.0)).dtype == np.float32


# ---------------------------------------------------------------- matmul with 1-D operands

def test_matrix_times_vector():
    a, b = parameter(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])), parameter(np.array([5.0, 6.0]))
    out = a @ b
    assert out.shape == (3,)
    np.testing.assert_array_equal(out.data, [17.0, 39.0, 61.0])
    out.backward(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a.grad, [[5.0, 6.0], [10.0, 12.0], [15.0, 18.0]])
    np.testing.assert_array_equal(b.grad, [22.0, 28.0])


def test_vector_times_vector_is_a_0d_array():
    a, b = parameter(np.array([1.0, 2.0, 3.0])), parameter(np.array([4.0, 5.0, 6.0]))
    out = a @ b
    assert type(out.data) is np.ndarray and out.shape == () and out.item() == 32.0
    out.backward()
    np.testing.assert_array_equal(a.grad, [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(b.grad, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("a_shape,b_shape,out_shape", [
    ((3, 4), (4,), (3,)), ((4,), (4,), ()), ((2, 3, 4), (4,), (2, 3)), ((4,), (2, 4, 5), (2, 5)),
    ((4,), (4, 5), (5,)), ((2, 1, 3, 4), (4,), (2, 1, 3)),
])
def test_matmul_1d_promotion_matches_finite_differences(a_shape, b_shape, out_shape):
    rng = np.random.default_rng(0)
    a, b = parameter(rng.standard_normal(a_shape)), parameter(rng.standard_normal(b_shape))
    assert (a @ b).shape == out_shape
    np.testing.assert_allclose((a @ b).data, np.matmul(a.data, b.data))
    assert gradcheck(lambda x, y: x @ y, (a, b))
    assert gradcheck(lambda x, y: x @ y, (a, tensor(b.data)))
    assert gradcheck(lambda x, y: x @ y, (tensor(a.data), b))


def test_matmul_of_a_0d_operand_raises_pytorchs_error():
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but they are 0D and 1D"):
        tensor(np.float64(2.0)) @ parameter(np.ones(3))


# ---------------------------------------------------------------- attention

def _uniform_qk(queries, keys):
    return tensor(np.zeros((1, queries, 2))), tensor(np.zeros((1, keys, 2)))


def test_attention_gradient_when_only_v_requires_grad():
    q, k = _uniform_qk(2, 3)
    v = parameter(np.arange(6.0).reshape(1, 3, 2))
    out = T.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(out.data, [[[2.0, 3.0], [2.0, 3.0]]])    # every query averages the three values
    out.sum().backward()
    np.testing.assert_allclose(v.grad, np.full((1, 3, 2), 2 / 3))
    assert q.grad is None and k.grad is None


@pytest.mark.parametrize("queries,keys,v_grad_rows", [(2, 3, [1.5, 0.5, 0.0]), (3, 2, [2.0, 1.0])])
def test_causal_attention_with_unequal_lengths_aligns_the_mask_top_left(queries, keys, v_grad_rows):
    """Query i sees keys 0..i (torch.ones(L, S).tril()): with equal scores, row i averages values 0..i."""
    q, k = _uniform_qk(queries, keys)
    v = parameter(np.arange(2.0 * keys).reshape(1, keys, 2))
    out = T.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = [v.data[0, : min(i, keys - 1) + 1].mean(axis=0) for i in range(queries)]
    np.testing.assert_allclose(out.data[0], expected)
    out.sum().backward()
    np.testing.assert_allclose(v.grad[0], np.repeat(np.array(v_grad_rows)[:, None], 2, axis=1))


def test_attention_flops_count_both_lengths_and_the_value_width():
    # Q·Kᵀ 2·L·S·E + P·V 2·L·S·Eᵥ + softmax 5·L·S, per batch element: 2·15·(2·4 + 2·2 + 5) = 510
    assert OPS["attention"].flops(((2, 3, 4), (2, 5, 4), (2, 5, 2)), (2, 3, 2), {}) == 510
    assert OPS["attention"].flops(((2, 5, 4),) * 3, (2, 5, 4), {}) == 4 * 2 * 25 * 4 + 5 * 2 * 25   # unchanged for L = S


# ---------------------------------------------------------------- cross_entropy options

CE_LOGITS = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [0.5, 0.5, -2.0]])
CE_TARGET = np.array([2, -100, 0])
CE_SMOOTHED_SUM_GRAD = [[0.1978905642888157, 0.5951983858784291, -0.7930889501672449], [0.0, 0.0, 0.0],
                        [-0.4530455445730644, 0.4469544554269356, 0.006091089146128735]]
CE_EXPECTED = {   # torch.nn.functional.cross_entropy(logits, target, **options): loss, d(loss.sum())/d(logits)
    "ignore": ({}, 1.348869289467578,
               [[0.11561194881107452, 0.3142658596058812, -0.4298778084169558], [0.0, 0.0, 0.0],
                [-0.2598561056198655, 0.24014389438013448, 0.019712211239731034]]),
    "ignore+smoothing": ({"label_smoothing": 0.1}, 1.3572026228009113,
                         [[0.09894528214440786, 0.29759919293921455, -0.39654447508362245], [0.0, 0.0, 0.0],
                          [-0.2265227722865322, 0.2234772277134678, 0.0030455445730643675]]),
    "sum": ({"label_smoothing": 0.1, "reduction": "sum"}, 2.7144052456018226, CE_SMOOTHED_SUM_GRAD),
    "none": ({"label_smoothing": 0.1, "reduction": "none"}, [1.8977021174412783, 0.0, 0.8167031281605446],
             CE_SMOOTHED_SUM_GRAD),
}


@pytest.mark.parametrize("case", list(CE_EXPECTED))
def test_cross_entropy_options_are_pytorchs(case):
    options, loss_value, grad = CE_EXPECTED[case]
    logits = parameter(CE_LOGITS.copy())
    loss = T.cross_entropy(logits, CE_TARGET, **options)
    assert type(loss.data) is np.ndarray
    np.testing.assert_allclose(loss.data, loss_value, rtol=1e-13)
    loss.sum().backward()
    np.testing.assert_allclose(logits.grad, grad, rtol=1e-12, atol=1e-15)
    assert gradcheck(lambda z: T.cross_entropy(z, CE_TARGET, **options), (parameter(CE_LOGITS.copy()),))


def test_label_smoothing_on_uniform_logits():
    logits = parameter(np.zeros((2, 4)))
    loss = T.cross_entropy(logits, [1, 3], label_smoothing=0.2)
    np.testing.assert_allclose(loss.data, np.log(4.0))
    loss.backward()    # p − y with y = 0.8·onehot + 0.05, over 2 rows
    np.testing.assert_allclose(logits.grad, [[0.1, -0.3, 0.1, 0.1], [0.1, 0.1, 0.1, -0.3]])


def test_in_range_ignore_index_and_none_keeps_the_target_shape():
    logits = parameter(np.zeros((2, 2, 3)))
    losses = T.cross_entropy(logits, np.array([[0, 1], [1, 2]]), ignore_index=1, reduction="none")
    assert losses.shape == (2, 2)
    np.testing.assert_allclose(losses.data, [[np.log(3), 0.0], [0.0, np.log(3)]])


def test_every_target_ignored_gives_nan_loss_and_zero_gradient():
    logits = parameter(np.ones((3, 4)))
    loss = T.cross_entropy(logits, [-100, -100, -100])
    assert np.isnan(loss.item())
    loss.backward()
    assert np.array_equal(logits.grad, np.zeros((3, 4)))


def test_unbatched_logits_take_a_0d_target():
    logits = parameter(np.array([0.0, 0.0, 0.0, 0.0]))
    loss = T.cross_entropy(logits, 2)
    assert loss.shape == () and type(loss.data) is np.ndarray
    np.testing.assert_allclose(loss.data, np.log(4.0))


@pytest.mark.parametrize("options,error,text", [
    ({"label_smoothing": 1.5}, RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    ({"reduction": "avg"}, ValueError, "avg is not a valid value for reduction"),
])
def test_cross_entropy_bad_options_raise_pytorchs_errors(options, error, text):
    with pytest.raises(error, match=text):
        T.cross_entropy(parameter(np.zeros((2, 3))), [0, 1], **options)


@pytest.mark.parametrize("target,bad", [([0, 7], 7), ([0, -1], -1)])
def test_out_of_range_target_raises_pytorchs_error(target, bad):
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
        T.cross_entropy(parameter(np.zeros((2, 3))), target)


# ---------------------------------------------------------------- 0-d results

@pytest.mark.parametrize("make", [
    lambda a: a.sum(), lambda a: a.mean(), lambda a: a[1] * 2.0, lambda a: a[0].exp(), lambda a: -(a[2]),
    lambda a: a @ a, lambda a: a.max(axis=0), lambda a: a.sum() ** 2, lambda a: a.sum().tanh(),
    lambda a: T.cross_entropy(a.reshape(1, 3), [1]),
], ids=["sum", "mean", "index-mul", "exp", "neg", "vec@vec", "max", "pow", "tanh", "cross_entropy"])
def test_0d_results_are_ndarrays(make):
    out = make(parameter(np.array([0.5, -1.0, 2.0])))
    assert out.shape == () and type(out.data) is np.ndarray


def test_integer_index_of_every_axis_is_a_0d_view():
    a = parameter(np.arange(12.0).reshape(3, 4))
    item = a[1, 2]
    assert type(item.data) is np.ndarray and item.storage is a.storage and item.item() == 6.0


def test_in_place_op_on_an_integer_index_writes_through():
    """As in torch, h[0] is a view of h, not a copy: h[0].mul_(2) changes h."""
    h = tensor(np.array([1.0, 2.0, 3.0]))
    h[0].mul_(2.0)
    np.testing.assert_array_equal(h.data, [2.0, 2.0, 3.0])
