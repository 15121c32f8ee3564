"""Every registered op against central finite differences in float64, broadcast shapes included.

CASES must name every op in the registry: an op added without a case fails `test_every_op_has_a_case`.
"""
import numpy as np
import pytest

import backend.tape as T
from backend.tape import OPS, gradcheck, parameter, tensor
from backend.tape import arrays

rng = np.random.default_rng(7)


def p(*shape, low=-1.0, high=1.0):
    return parameter(rng.uniform(low, high, shape))


def ints(high, *shape):
    return tensor(rng.integers(0, high, shape))


def causal_mask(seq):
    return tensor(np.triu(np.ones((seq, seq), dtype=bool), 1))


CASES = {
    "add": [(lambda a, b: a + b, (p(3, 4), p(4))), (lambda a, b: a + b, (p(2, 1, 4), p(3, 1))),
            (lambda a, b: a + b, (p(), p())), (lambda a, b: a + b, (p(3), p()))],
    "sub": [(lambda a, b: a - b, (p(3, 4), p(3, 1))), (lambda a: 2.0 - a, (p(5),)),
            (lambda a, b: a - b, (p(1, 4), p(3, 1)))],
    "mul": [(lambda a, b: a * b, (p(3, 4), p(1, 4))), (lambda a, b: a * b, (p(2, 3, 4), p(4))),
            (lambda a, b: a * b, (p(), p(2, 3)))],
    "div": [(lambda a, b: a / b, (p(3, 4), p(4, low=0.5, high=2.0))),
            (lambda a, b: a / b, (p(3, 1), p(1, 4, low=0.5, high=2.0)))],
    "neg": [(lambda a: -a, (p(3, 2),))],
    "pow": [(lambda a: a ** 3, (p(3, 4),)), (lambda a: a ** 0.5, (p(4, low=0.5, high=2.0),)),
            (lambda a: a ** 0, (p(3, 4),)), (lambda a: a ** 1, (p(3, 4),)),
            (lambda a: a ** 3, (p(4, low=-2.0, high=-0.5),)), (lambda a: a ** -2, (p(4, low=0.5, high=2.0),)),
            (lambda a: a ** 2, (p(),))],
    "matmul": [(lambda a, b: a @ b, (p(3, 4), p(4, 5))), (lambda a, b: a @ b, (p(2, 3, 4), p(4, 5))),
               (lambda a, b: a @ b, (p(2, 3, 4), p(2, 4, 5))), (lambda a, b: a @ b, (p(2, 1, 3, 4), p(3, 4, 2))),
               # torch.matmul's 1-D rules: a vector is a row on the left, a column on the right
               (lambda a, b: a @ b, (p(3, 4), p(4))), (lambda a, b: a @ b, (p(4), p(4))),
               (lambda a, b: a @ b, (p(2, 3, 4), p(4))), (lambda a, b: a @ b, (p(4), p(2, 4, 5))),
               (lambda a, b: a @ b, (p(4), p(4, 5)))],
    "sum": [(lambda a: a.sum(), (p(3, 4),)), (lambda a: a.sum(axis=1, keepdims=True), (p(3, 4),)),
            (lambda a: a.sum(axis=(0, 2)), (p(2, 3, 4),))],
    "mean": [(lambda a: a.mean(), (p(3, 4),)), (lambda a: a.mean(axis=-1), (p(2, 3, 4),)), (lambda a: a.mean(), (p(),))],
    "max": [(lambda a: a.max(axis=1), (p(3, 5),)), (lambda a: a.max(axis=0, keepdims=True), (p(4, 3),)),
            (lambda a: a.max(axis=0), (p(5),))],
    "exp": [(lambda a: a.exp(), (p(3, 4),))],
    "log": [(lambda a: a.log(), (p(3, 4, low=0.5, high=2.0),))],
    "tanh": [(lambda a: a.tanh(), (p(3, 4),))],
    "sigmoid": [(lambda a: a.sigmoid(), (p(3, 4),))],
    "relu": [(lambda a: a.relu(), (p(3, 4),))],
    # relu's vjp as create_graph records it: gated in the adjoint, flat (slope 0) in relu's output
    "relu_backward": [(lambda g, r: arrays.relu_backward(g, r), (p(3, 4), p(3, 4)))],
    "gelu": [(lambda a: T.gelu(a), (p(3, 4, low=-3, high=3),))],
    "softmax": [(lambda a: T.softmax(a, dim=-1), (p(3, 5),)), (lambda a: T.softmax(a, dim=0), (p(3, 5),))],
    "log_softmax": [(lambda a: T.log_softmax(a, dim=-1), (p(3, 5),))],
    "cross_entropy": [(lambda a: T.cross_entropy(a, np.array([0, 3, 1, 4])), (p(4, 5),)),
                      (lambda a: T.cross_entropy(a, np.array([[1, 2], [0, 0]])), (p(2, 2, 3),)),
                      (lambda a: T.cross_entropy(a, np.array([0, -100, 1, 4])), (p(4, 5),)),
                      (lambda a: T.cross_entropy(a, np.array([0, 3, 1, 4]), label_smoothing=0.2), (p(4, 5),)),
                      (lambda a: T.cross_entropy(a, np.array([2, 3, 2, 4]), ignore_index=2, label_smoothing=0.3),
                       (p(4, 5),)),
                      (lambda a: T.cross_entropy(a, np.array([0, -100, 4]), reduction="sum"), (p(3, 5),)),
                      (lambda a: T.cross_entropy(a, np.array([[0, 2], [-100, 1]]), label_smoothing=0.1,
                                                 reduction="none"), (p(2, 2, 3),)),
                      (lambda a: T.cross_entropy(a, 2), (p(4),))],
    "layernorm": [(lambda x, w, b: T.layer_norm(x, w, b), (p(3, 6), p(6), p(6))),
                  (lambda x, w, b: T.layer_norm(x, w, b), (p(2, 3, 4), p(4), p(4)))],
    "rmsnorm": [(lambda x, w: T.rms_norm(x, w), (p(3, 6), p(6)))],
    "dropout": [(lambda x: _seeded(lambda: T.dropout(x, 0.3)), (p(4, 5),))],
    "embedding": [(lambda w: T.embedding(tensor(np.array([[0, 2, 2], [1, 0, 3]])), w), (p(4, 3),))],
    "masked_fill": [(lambda x: T.masked_fill(x, causal_mask(4), -5.0), (p(2, 4, 4),))],
    "attention": [
        (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True), (p(2, 3, 4), p(2, 3, 4), p(2, 3, 4))),
        (lambda q, k, v: _seeded(lambda: T.scaled_dot_product_attention(q, k, v, dropout_p=0.25)),
         (p(1, 2, 4, 3), p(1, 2, 4, 3), p(1, 2, 4, 3))),
        # causal with L ≠ S (PyTorch's top-left mask), value dim ≠ key dim, and a key/value batch broadcast
        (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True), (p(2, 3, 4), p(2, 5, 4), p(2, 5, 2))),
        (lambda q, k, v: T.scaled_dot_product_attention(q, k, v, is_causal=True), (p(2, 5, 4), p(2, 3, 4), p(2, 3, 4))),
        (lambda q, k, v: T.scaled_dot_product_attention(q, k, v), (p(2, 3, 4), p(1, 2, 4), p(1, 2, 4))),
    ],
    "reshape": [(lambda a: a.reshape(6, 2), (p(3, 4),)), (lambda a: a.T.reshape(-1), (p(3, 4),))],
    "permute": [(lambda a: a.permute(2, 0, 1), (p(2, 3, 4),)), (lambda a: a.T, (p(3, 4),))],
    "getitem": [(lambda a: a[1:, ::2], (p(3, 4),)), (lambda a: a[np.array([0, 2, 0])], (p(3, 4),)),
                (lambda a: a[1, 2], (p(3, 4),)), (lambda a: a[2], (p(4),))],
    "concat": [(lambda a, b: T.cat([a, b], dim=1), (p(2, 3), p(2, 2)))],
    "checkpoint": [(lambda a, b: T.checkpoint(lambda x, w: (x @ w).tanh() * x.sum(), a, b), (p(3, 4), p(4, 4))),
                   (lambda a: _seeded(lambda: T.checkpoint(lambda x: T.dropout(x.exp(), 0.3), a)), (p(4, 5),))],
    "as_strided": [(lambda a: _view_after_base_write(a), (p(3, 4),))],
    "index_put": [(lambda a, b: _assigned(a, b, (0, slice(1, 3))), (p(3, 4), p(2))),
                  (lambda a, b: _assigned(a, b, (np.array([2, 0]), np.array([1, 3]))), (p(3, 4), p(2))),
                  (lambda a, b: _assigned(a.T, b, (slice(None), 1)), (p(3, 4), p(4)))],
    "fill": [(lambda a: _filled(a), (p(3, 4),))],
    # the adjoints' own movement ops, which create_graph records (backend/tape/arrays.py)
    "expand": [(lambda a: arrays.expand(a, (2, 3, 4)), (p(3, 1),)), (lambda a: arrays.expand(a, (3, 2)), (p(),))],
    "scatter_add": [(lambda a: arrays.scatter_add(a, np.array([0, 2, 0]), (4, 3)), (p(3, 3),)),
                    (lambda a: arrays.scatter_add(a, (slice(1, 3), 0), (4, 2)), (p(2),))],
    # float64 to float64 (finite differences need float64); tests/tape/test_precision.py covers float16/bfloat16
    "cast": [(lambda a: T.cast(a, "float64") * a, (p(3, 4),))],
}


def _view_after_base_write(a):
    """A view taken before an in-place op on its base reads the base's new history (AsStrided)."""
    h = a * 1.0
    view = h[1:, :2]
    h.mul_(a)
    return view * 1.0


def _assigned(a, b, key):
    """Item assignment of a tensor that requires grad into one built from another (index_put)."""
    h = a * 1.0
    h[key] = b * b
    return h * a


def _filled(a):
    """zero_ on a view: the zeroed region gets no gradient through h, only through the other factor."""
    h = a.exp() + 1.0           # (tanh would save its output, and zero_ on it is a version error, as in torch)
    h[1:].zero_()
    return h * a


def _seeded(make):
    """Dropout must draw the same mask on every finite-difference evaluation."""
    T.manual_seed(123)
    return make()


def test_every_op_has_a_case():
    assert set(CASES) == set(OPS), f"ops without a finite-difference case: {sorted(set(OPS) - set(CASES))}"


@pytest.mark.parametrize("op_name,index", [(name, i) for name, cases in CASES.items() for i in range(len(cases))])
def test_vjp_matches_finite_differences(op_name, index):
    fn, inputs = CASES[op_name][index]
    out = fn(*inputs)
    assert out.grad_fn is not None and out.requires_grad
    assert gradcheck(fn, inputs)


def test_gradcheck_catches_a_wrong_rule(monkeypatch):
    from dataclasses import replace
    from backend.tape import registry
    wrong = replace(OPS["tanh"], vjp=lambda g, s, node: (g * (1 + s["out"]),))
    monkeypatch.setitem(registry.OPS, "tanh", wrong)
    monkeypatch.setitem(registry._plans, "tanh", wrong.save_plan())
    from backend.tape.dispatch import apply
    with pytest.raises(T.GradcheckError, match="Jacobian mismatch for input 0"):
        gradcheck(lambda a: apply(wrong, (a,)), (p(3),))
