"""torch's refusals and edge cases, kept: integer tensors cannot require grad, a non-leaf's flag cannot be turned off,
a seed of the wrong shape is named, slices never step backwards, a zero-size matmul differentiates to zeros, and
gradcheck perturbs the input itself even when it is F-ordered. Each is checked against torch where it is installed."""
import numpy as np
import pytest

import backend.tape as T
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


def _hooked_run(lib, make, clip):
    """A leaf used twice and a non-leaf whose gradient a hook scales; the leaf's hook clips the summed gradient."""
    seen = []
    w = make(np.array([1.0, -2.0, 3.0]))
    h = w * 2.0
    h.register_hook(lambda g: g * 10.0)
    w.register_hook(lambda g: (seen.append(np.array(getattr(g, "data", g)) if not hasattr(g, "detach")
                                           else g.detach().numpy().copy()), g.clamp(-clip, clip) if hasattr(g, "clamp")
                               else T.tensor(np.clip(g.data, -clip, clip)))[1])
    ((h * h).sum() + (w * 3.0).sum()).backward()
    grad = w.grad.numpy() if hasattr(w.grad, "numpy") else w.grad
    return grad, seen


def test_register_hook_replaces_a_gradient_and_a_leaf_hook_sees_the_summed_gradient_once():
    grad, seen = _hooked_run(T, T.parameter, 100.0)
    np.testing.assert_array_equal(seen[0], [83.0, -157.0, 243.0])      # 10·8w + 3, once: both uses summed first
    assert len(seen) == 1
    np.testing.assert_array_equal(grad, [83.0, -100.0, 100.0])         # the clipped value is what lands
    if torch is None:
        return
    theirs, their_seen = _hooked_run(torch, lambda a: torch.tensor(a, requires_grad=True), 100.0)
    np.testing.assert_array_equal(grad, theirs)
    np.testing.assert_array_equal(seen[0], their_seen[0])


def test_a_removed_hook_no_longer_runs_and_grad_sees_hooked_gradients():
    w = T.parameter(np.array([1.0, 2.0]))
    h = w * 3.0
    handle = h.register_hook(lambda g: g * 0.0)
    handle.remove()
    h.sum().backward()
    np.testing.assert_array_equal(w.grad, [3.0, 3.0])
    x = T.parameter(np.array([1.0, 2.0]))
    y = x * x
    y.register_hook(lambda g: g * 2.0)
    (gx,) = T.grad(y.sum(), x)
    np.testing.assert_array_equal(gx.data, [4.0, 8.0])                # 2 · 2x


def test_hook_errors_are_torchs():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        T.tensor(np.ones(2)).register_hook(lambda g: g)
    w = T.parameter(np.ones(2))
    h = w * 2.0
    h.register_hook(lambda g: T.tensor(np.ones(3)))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        h.sum().backward()
