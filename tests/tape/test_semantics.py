"""PyTorch's autograd semantics, one behaviour per test: recording, freeing, versions, accumulation."""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import SGD, Adam, no_grad, parameter, tensor


def test_requires_grad_propagates_and_constants_record_nothing():
    w = parameter(np.ones((2, 2)))
    x = tensor(np.ones((3, 2)))
    assert (x @ w).requires_grad and (x @ w).grad_fn is not None
    plain = x * 2.0
    assert not plain.requires_grad and plain.grad_fn is None


def test_no_grad_records_nothing():
    w = parameter(np.ones((2, 2)))
    with no_grad():
        y = (w * 3.0).relu()
    assert y.grad_fn is None and not y.requires_grad


def test_detach_shares_storage_and_cuts_the_graph():
    w = parameter(np.ones((2, 2)))
    y = w * 3.0
    d = y.detach()
    assert d.storage is y.storage and d.grad_fn is None and not d.requires_grad
    assert np.shares_memory(d.data, y.data)


def test_views_share_storage():
    x = tensor(np.arange(12.0).reshape(3, 4))
    assert x.reshape(4, 3).storage is x.storage
    assert x.T.storage is x.storage
    assert x[1:].storage is x.storage
    assert x[np.array([0, 0])].storage is not x.storage     # advanced indexing copies


def test_freezing_a_parameter_prunes_the_graph_behind_it():
    frozen = tensor(np.ones((4, 4)))            # requires_grad=False: a frozen weight
    w = parameter(np.ones((4, 1)))
    x = tensor(np.ones((2, 4)))
    h = (x @ frozen).relu()
    assert h.grad_fn is None                    # nothing recorded before the first trainable parameter
    out = (h @ w).sum()
    out.backward()
    assert w.grad is not None


def test_matmul_saves_only_what_the_needed_gradients_read():
    x = tensor(np.ones((5, 3)))
    w = parameter(np.ones((3, 2)))
    y = x @ w
    assert set(y.grad_fn.saved) == {"a"}        # dW = Xᵀ·dY needs X; W is not saved since x needs no grad
    both = parameter(np.ones((5, 3))) @ w
    assert set(both.grad_fn.saved) == {"a", "b"}


def test_add_saves_nothing_and_relu_saves_its_output():
    a, b = parameter(np.ones((2, 2))), parameter(np.ones(2))
    s = a + b
    assert s.grad_fn.saved == {}
    r = s.relu()
    array, storage, *_ = r.grad_fn.saved["out"]
    assert storage is r.storage


def test_leaf_grad_is_none_until_reached_then_accumulates_across_backward_calls():
    w = parameter(np.array([1.0, 2.0]))
    unused = parameter(np.array([5.0]))
    assert w.grad is None
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad, [3.0, 3.0])
    (w * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad, [6.0, 6.0])
    assert unused.grad is None


def test_a_tensor_used_twice_receives_the_sum_of_both_contributions():
    x = parameter(np.array([2.0]))
    y = x * x + x                  # d/dx = 2x + 1 = 5
    y.sum().backward()
    np.testing.assert_allclose(x.grad, [5.0])


def test_intermediate_gradients_are_freed_unless_retained():
    w = parameter(np.array([1.0, -2.0]))
    h = w * 2.0
    kept = h * 1.0
    kept.retain_grad()
    kept.sum().backward()
    assert h.grad is None
    np.testing.assert_array_equal(kept.grad, [1.0, 1.0])


def test_backward_frees_saved_tensors_and_a_second_backward_raises():
    w = parameter(np.ones((3, 3)))
    loss = (w.tanh() * 2.0).sum()
    loss.backward()
    assert loss.grad_fn.next[0].saved == {}     # freed
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time"):
        loss.backward()


def test_retain_graph_allows_a_second_backward():
    w = parameter(np.array([1.0, 2.0]))
    loss = (w.tanh()).sum()
    loss.backward(retain_graph=True)
    first = w.grad.copy()
    loss.backward()
    np.testing.assert_allclose(w.grad, 2 * first)


def test_stale_saved_tensor_raises_the_version_error_with_op_dtype_shape_and_versions():
    w = parameter(np.ones((64, 64), dtype=np.float32))
    a = tensor(np.ones((64, 64), dtype=np.float32)) @ w      # non-leaf, version 0
    a.relu_()                                                 # version 1; ReluBackward saves its output
    a.mul_(2.0)                                               # version 2
    with pytest.raises(RuntimeError) as error:
        a.sum().backward()
    assert str(error.value).startswith(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[float32 [64, 64]], which is output 0 of ReluBackward, is at version 2; expected version 1")


def test_item_assignment_bumps_the_version_of_a_saved_input():
    x = tensor(np.ones((4, 1)))
    w = parameter(np.ones((1, 3)))
    y = x @ w                       # saves x at version 0
    x[0, 0] = 5.0
    assert x.storage.version == 1
    with pytest.raises(RuntimeError, match=r"\[float64 \[4, 1\]\] is at version 1; expected version 0"):
        y.sum().backward()


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    w = parameter(np.ones(3))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.add_(1.0)
    with no_grad():
        w.add_(1.0)
    assert w.storage.version == 1 and w.data[0] == 2.0


def test_in_place_ops_bump_versions():
    x = tensor(np.ones(3))
    for op in (lambda: x.add_(1.0), lambda: x.mul_(2.0), lambda: x.relu_(), lambda: x.zero_()):
        before = x.storage.version
        op()
        assert x.storage.version == before + 1


def test_zero_grad_set_to_none_and_sgd():
    w = parameter(np.array([1.0, 2.0]))
    opt = SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.data, [0.0, 0.0])
    opt.zero_grad(set_to_none=True)
    assert w.grad is None
    (w + 1.0).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad, [0.0, 0.0])


def test_adam_state_is_real_tensors_and_matches_the_formula():
    w = parameter(np.array([1.0, -1.0]))
    opt = Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    state = opt.state[0]
    assert isinstance(state["m"], T.Tensor) and state["m"].storage.kind == "optimizer"
    # First Adam step moves each weight by lr·sign(g) (bias-corrected m/√v = ±1).
    np.testing.assert_allclose(w.data, [0.9, -0.9], atol=1e-7)


def test_dtypes_are_kept():
    assert parameter(np.ones(2)).dtype == np.float64
    assert tensor([1.0, 2.0]).dtype == np.float32
    p32 = parameter(np.ones((2, 2), dtype=np.float32))
    assert (p32 * 2.0 + 1.0).dtype == np.float32


def test_a_ten_thousand_op_chain_backs_through_without_recursion():
    w = parameter(np.array([1.0]))
    h = w
    for _ in range(10_000):
        h = h * 1.0001
    h.sum().backward()
    np.testing.assert_allclose(w.grad, [1.0001 ** 10_000], rtol=1e-9)


def test_numpy_asarray_gives_values_and_data_can_be_written():
    w = parameter(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(w), [1.0, 2.0])
    w.data -= 1.0
    np.testing.assert_array_equal(np.asarray(w), [0.0, 1.0])
    w.grad = None
    assert w.grad is None
