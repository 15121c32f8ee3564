"""torch's refusals and edge cases, kept: integer tensors cannot require grad, a non-leaf's flag cannot be turned off,
a seed of the wrong shape is named, slices never step backwards, a zero-size matmul differentiates to zeros, and
gradcheck perturbs the input itself even when it is F-ordered. Each is checked against torch where it is installed."""
import numpy as np
import pytest

from backend.tape import gradcheck, parameter, tensor

try:
    import torch
except ImportError:            # the literal expectations below still run
    torch = None


def _torch_raises(thunk, match):
    if torch is not None:
        with pytest.raises((RuntimeError, ValueError), match=match):
            thunk()


def test_an_integer_tensor_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        tensor(np.array([1, 2]), requires_grad=True)
    leaf = tensor(np.array([1, 2]))
    with pytest.raises(RuntimeError, match="floating point"):
        leaf.requires_grad = True
    _torch_raises(lambda: torch.tensor([1, 2]).requires_grad_(), "only Tensors of floating point")


def test_a_non_leaf_cannot_stop_requiring_grad():
    out = parameter(np.ones(2)) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        out.requires_grad = False
    assert out.requires_grad
    _torch_raises(lambda: setattr(torch.ones(2, requires_grad=True) * 2, "requires_grad", False), "leaf variables")


def test_a_seed_gradient_of_the_wrong_shape_is_named():
    out = parameter(np.ones((2, 2))) * 2
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \[3\] and "
                                           r"output\[0\] has a shape of \[2, 2\]"):
        out.backward(np.ones(3))
    _torch_raises(lambda: (torch.ones(2, 2, requires_grad=True) * 2).backward(torch.ones(3)), "Mismatch in shape")


def test_a_slice_with_a_negative_step_is_refused():
    with pytest.raises(ValueError, match="step must be greater than zero"):
        parameter(np.arange(4.0))[::-1]
    _torch_raises(lambda: torch.arange(4.0)[::-1], "step must be greater than zero")


@pytest.mark.parametrize("a_shape, b_shape", [((2, 0), (0, 3)), ((4, 2, 0), (0, 3)), ((2, 3), (3, 0)), ((0, 3), (3, 2))])
def test_a_zero_size_matmul_differentiates_to_zeros(a_shape, b_shape):
    a, b = parameter(np.ones(a_shape)), parameter(np.ones(b_shape))
    (a @ b).sum().backward()
    np.testing.assert_array_equal(a.grad, np.zeros(a_shape))
    np.testing.assert_array_equal(b.grad, np.zeros(b_shape))
    if torch is not None:
        ta, tb = torch.ones(a_shape, requires_grad=True), torch.ones(b_shape, requires_grad=True)
        (ta @ tb).sum().backward()
        assert tuple(ta.grad.shape) == a_shape and tuple(tb.grad.shape) == b_shape


def test_gradcheck_perturbs_an_f_ordered_input_itself():
    x = parameter(np.asfortranarray(np.random.default_rng(0).normal(size=(3, 4))))
    assert x.data.flags["F_CONTIGUOUS"] and not x.data.flags["C_CONTIGUOUS"]
    assert gradcheck(lambda a: (a * a).tanh().sum(), [x])
