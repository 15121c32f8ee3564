"""Views, in-place ops and 0-d tensors behave as PyTorch's do (issue 11's numbered cases, one test or row each).

Each program runs on our engine against a literal expected gradient, and, where PyTorch is installed, on torch
too, written once for both: `lib` is `backend.tape` or `torch`, `make(array)` builds a tensor in that library.
"""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import checkpoint, no_grad, parameter, tensor

try:
    import torch
except ImportError:          # the engine's own checks still run
    torch = None

A = np.arange(12.0).reshape(3, 4) / 10


def _zeros(lib, shape):
    return tensor(np.zeros(shape)) if lib is T else torch.zeros(shape, dtype=torch.float64)


def inplace_on_view(x, lib):
    h = x * 1.0
    h[0].mul_(2.0)
    return h.sum()


def inplace_on_base_after_view(x, lib):
    h = x * 1.0
    row = h[1]
    h.mul_(3.0)
    return (row * row).sum()


def relu_on_reshape_view(x, lib):
    h = x - 0.5
    h.reshape(12).relu_()
    return (h * h).sum()


def inplace_on_transposed_slice(x, lib):
    h = x * 1.0
    view = h[:, 1:3]
    view.T.mul_(x[:2, :3] * 1.0)
    return (h * h).sum() + (view * view).sum()


def sibling_views(x, lib):
    h = x * 1.0
    first, second = h[0], h[1]
    first.mul_(2.0)
    return (second * second).sum() + (first * first).sum() + (h * h).sum()


def view_of_view(x, lib):
    h = x * 2.0
    row = h[0]
    tail = row[1:]
    tail.mul_(x[1, 1:])
    h.add_(1.0)
    return (row * row).sum() + (h * tail.sum()).sum()


def assign_grad_into_plain(x, lib):
    z = _zeros(lib, (2, 4))
    z[1] = x[0] * 3.0
    return (z * z).sum()


def assign_slice(x, lib):
    h = x * 1.0
    h[0, 1:3] = x[1, :2] * x[2, :2]
    return (h * h).sum()


def assign_constant_into_view(x, lib):
    h = x * 1.0
    h[1:][0] = 5.0
    return (h * h).sum()


def zero_a_view(x, lib):
    h = x * 1.0
    h[1:].zero_()
    return (h * x).sum()


def mul_by_a_tensor_that_requires_grad(x, lib):
    h = x * 1.0
    h.mul_(x)
    return (h * h).sum()


PROGRAMS = {
    # name: (program, expected x.grad; None: checked against finite differences instead)
    "in-place on a view reaches the base": (inplace_on_view, [[2] * 4, [1] * 4, [1] * 4]),
    "in-place on the base after a view": (inplace_on_base_after_view, [[0] * 4, [7.2, 9.0, 10.8, 12.6], [0] * 4]),
    "relu_ on a reshape view": (relu_on_reshape_view, [[0, 0, 0, 0], [0, 0, 0.2, 0.4], [0.6, 0.8, 1.0, 1.2]]),
    "in-place on a transposed slice": (inplace_on_transposed_slice, None),
    "sibling views": (sibling_views, [[0, 1.6, 3.2, 4.8], [1.6, 2.0, 2.4, 2.8], [1.6, 1.8, 2.0, 2.2]]),
    "a view of a view": (view_of_view, None),
    "assigning a tensor that requires grad": (assign_grad_into_plain, [[0, 1.8, 3.6, 5.4], [0] * 4, [0] * 4]),
    "assigning into a slice": (assign_slice, None),
    "assigning a constant into a view": (assign_constant_into_view, [[0, 0.2, 0.4, 0.6], [0] * 4, [1.6, 1.8, 2.0, 2.2]]),
    "zero_ on a view": (zero_a_view, [[0, 0.2, 0.4, 0.6], [0] * 4, [0] * 4]),
    "mul_ by a tensor that requires grad": (mul_by_a_tensor_that_requires_grad, None),
}


def _ours(program):
    x = parameter(A.copy())
    program(x, T).backward()
    return x.grad


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_matches_the_expected_gradient(name):
    program, expected = PROGRAMS[name]
    grad = _ours(program)
    if expected is not None:
        np.testing.assert_allclose(grad, expected, atol=1e-12)
    else:
        assert T.gradcheck(lambda x: program(x, T), (parameter(A.copy()),))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_matches_pytorch(name):
    program, _ = PROGRAMS[name]
    x = torch.tensor(A.copy(), requires_grad=True)
    program(x, torch).backward()
    np.testing.assert_allclose(_ours(program), x.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_the_base_and_views_carry_pytorchs_grad_fn_names():
    x = parameter(A.copy())
    h = x * 1.0
    row = h[0]
    row.mul_(2.0)
    assert h.grad_fn.name() == "CopySlices" and row.grad_fn.name() == "AsStridedBackward"
    later = h[1]
    h.add_(1.0)
    assert later.grad_fn.name() == "AsStridedBackward" and later.grad_fn.next[0] is h.grad_fn


def test_an_in_place_op_on_a_view_of_a_leaf_that_requires_grad_is_refused():
    w = parameter(np.ones(3))
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation.$"):
        w[:2].add_(1.0)
    np.testing.assert_array_equal(w.data, [1, 1, 1])          # and the parameter is unchanged
    with no_grad():
        w[:2].add_(1.0)                                       # allowed where nothing is recorded
    np.testing.assert_array_equal(w.data, [2, 2, 1])


def test_item_assignment_records_the_gradient_into_a_tensor_that_did_not_require_it():
    w = parameter(np.ones(4))
    z = tensor(np.zeros((2, 4)))
    z[1] = w * 3.0
    assert z.requires_grad and z.grad_fn.name() == "IndexPutBackward"
    z.sum().backward()
    np.testing.assert_array_equal(w.grad, [3, 3, 3, 3])


def test_retain_grad_keeps_the_gradient_of_the_value_after_an_in_place_op():
    x = parameter(A.copy())
    h = x * 1.0
    h.retain_grad()
    h.mul_(2.0)
    h.sum().backward()
    np.testing.assert_array_equal(h.grad, np.ones((3, 4)))
    np.testing.assert_array_equal(x.grad, 2 * np.ones((3, 4)))


def test_mul_in_place_by_a_tensor_that_requires_grad_saves_the_original_and_is_no_version_error():
    x = parameter(np.array([1.0, 2.0]))
    b = parameter(np.array([3.0, 5.0]))
    h = x * 1.0
    h.mul_(b)
    assert "a" in h.grad_fn.saved and h.grad_fn.saved["a"][1] is not h.storage     # a clone, as torch's original_self
    h.sum().backward()
    np.testing.assert_array_equal(x.grad, [3, 5])
    np.testing.assert_array_equal(b.grad, [1, 2])


def test_bool_follows_pytorch():
    assert bool(tensor(np.zeros(1))) is False and bool(tensor(np.ones((1, 1)))) is True
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(tensor(np.zeros(2)))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(tensor(np.zeros(0)))


@pytest.mark.parametrize("make", [
    lambda w: (w * 2.0).sum(),
    lambda w: (w * 2.0).mean(),
    lambda w: T.cross_entropy(w.reshape(1, 3), np.array([1])),
    lambda w: (w.sum() * 2.0).tanh(),
    lambda w: w[1],
], ids=["sum", "mean", "cross_entropy", "elementwise on 0-d", "indexing to 0-d"])
def test_zero_d_results_are_zero_d_arrays(make):
    w = parameter(np.array([0.1, 0.2, 0.3]))
    loss = make(w)
    assert type(loss.data) is np.ndarray and loss.data.shape == ()
    assert type(np.asarray(loss)) is np.ndarray and type(np.asarray(loss.detach())) is np.ndarray
    with no_grad():
        assert type(make(w).data) is np.ndarray
    value = loss.data.item()
    assert float(loss) == value and f"{loss:.3f}" == f"{value:.3f}" and int(loss) == int(value)
    loss.backward()
    assert type(w.grad) is np.ndarray and w.grad.shape == (3,)


def test_an_in_place_op_on_a_zero_d_loss_under_no_grad():
    loss = (parameter(np.array([1.0, 2.0])) * 1.0).sum()
    with no_grad():
        loss.add_(1)
    assert float(loss) == 4.0


def test_python_scalar_conversions_follow_pytorch():
    assert [10, 20, 30][tensor(np.array(1))] == 20
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][tensor(np.array(1.0))]
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(tensor(np.ones(2)))
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{tensor(np.ones(2)):.3f}"
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tensor(np.ones(2)).item()
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tensor(np.array(1.0)))
    assert float(tensor(np.ones((1, 1)))) == 1.0


def test_view_on_a_non_contiguous_tensor_raises_and_points_to_reshape():
    x = tensor(np.ones((3, 4)))
    with pytest.raises(RuntimeError, match=r"view size is not compatible .* Use \.reshape\(\.\.\.\) instead\."):
        x.T.view(12)
    assert x.view(4, 3).storage is x.storage and x.T.reshape(12).storage is not x.storage


def test_a_numpy_scalar_keeps_its_dtype():
    assert tensor(np.float64(1.5)).dtype == np.float64 and tensor(np.float64(1.5)).shape == ()
    assert tensor(1.5).dtype == np.float32


def test_a_checkpoint_where_nothing_requires_grad_returns_an_output_that_does_not():
    x = tensor(np.ones((2, 3)))
    frozen = tensor(np.ones((3, 3)))
    out = checkpoint(lambda a: (a @ frozen).tanh(), x)
    assert not out.requires_grad and out.grad_fn is None
    w = parameter(np.ones((3, 3)))
    assert checkpoint(lambda a: (a @ w).tanh(), x).requires_grad      # a parameter inside the region counts


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_checkpoint_requires_grad_matches_pytorch():
    from torch.utils.checkpoint import checkpoint as torch_checkpoint
    frozen = torch.ones(3, 3)
    out = torch_checkpoint(lambda a: (a @ frozen).tanh(), torch.ones(2, 3), use_reentrant=False)
    assert not out.requires_grad
