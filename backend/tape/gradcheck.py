"""gradcheck: compare every analytic gradient with central finite differences in float64."""
import numpy as np

from backend.tape.grad_mode import no_grad
from backend.tape.tensor import Tensor


class GradcheckError(AssertionError):
    pass


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0):
    """Check d(sum(w ⊙ fn(*inputs)))/d(input) for every input that requires grad; w is a fixed random weight.

    Inputs must be float64 (finite differences in lower precision are noise). Raises GradcheckError naming the
    input and the worst element; returns True when all agree.
    """
    for index, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad and t.data.dtype != np.float64:
            raise GradcheckError(f"input {index} is {t.data.dtype}: gradcheck needs float64 inputs")
    out = fn(*inputs)
    weight = np.random.default_rng(seed).standard_normal(out.shape)
    for t in inputs:
        if isinstance(t, Tensor):
            t.grad = None
    (out * weight).sum().backward()
    for index, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            continue
        numeric = _numeric_grad(fn, inputs, t, weight, eps)
        analytic = np.zeros_like(t.data) if t.grad is None else np.asarray(t.grad)
        if not np.allclose(analytic, numeric, atol=atol, rtol=rtol):
            worst = np.unravel_index(np.argmax(np.abs(analytic - numeric)), numeric.shape)
            raise GradcheckError(
                f"Jacobian mismatch for input {index} ({t.name or 'unnamed'}) at {tuple(int(i) for i in worst)}: "
                f"analytic {analytic[worst]:.8g}, numeric {numeric[worst]:.8g}")
    return True


def _numeric_grad(fn, inputs, t, weight, eps):
    """Central differences, one element at a time, written into t.data itself by index: a reshape(-1) of an
    F-ordered or strided array is a copy, and perturbing the copy would leave the input, and the answer, unchanged."""
    grad = np.zeros(t.data.shape, dtype=t.data.dtype)
    with no_grad():
        for index in np.ndindex(t.data.shape):
            original = t.data[index]
            t.data[index] = original + eps
            plus = np.sum(np.asarray(fn(*inputs).data) * weight)
            t.data[index] = original - eps
            minus = np.sum(np.asarray(fn(*inputs).data) * weight)
            t.data[index] = original
            grad[index] = (plus - minus) / (2 * eps)
    return grad
