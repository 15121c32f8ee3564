"""The tape engine: a numpy Wengert list with PyTorch's autograd semantics.

    from backend.tape import Tensor, tensor, parameter, no_grad, gradcheck, jvp, jacobian, grad, hvp
"""
from backend.tape import ops  # noqa: F401  (fills the registry)
from backend.tape import methods  # noqa: F401  (attaches Tensor's operators)
from backend.tape.autograd import grad, hvp
from backend.tape.amp import autocast
from backend.tape.checkpoint import checkpoint
from backend.tape.engine import backward
from backend.tape.forward import jacobian, jvp
from backend.tape.functional import (
    cast, cat, cross_entropy, dropout, embedding, gelu, layer_norm, log_softmax, masked_fill, matmul, mse_loss,
    permute, relu, reshape, rms_norm, scaled_dot_product_attention, sigmoid, softmax, tanh, transpose,
)
from backend.tape.gradcheck import GradcheckError, gradcheck
from backend.tape.grad_mode import enable_grad, layer_scope, no_grad
from backend.tape.optim import SGD, Adam, AdamW
from backend.tape.optim_8bit import Adam8bit
from backend.tape.random import get_rng_state, manual_seed, set_rng_state
from backend.tape.registry import OPS
from backend.tape.tensor import Tensor, parameter, tensor

layernorm, rmsnorm = layer_norm, rms_norm      # the registry's op names, for readers who look for them

ENGINE_VERSION = "0.1.0"

__all__ = [
    "Tensor", "tensor", "parameter", "no_grad", "enable_grad", "layer_scope", "gradcheck", "GradcheckError", "backward",
    "jvp", "jacobian", "grad", "hvp", "SGD", "Adam", "AdamW", "Adam8bit", "checkpoint", "OPS", "ENGINE_VERSION", "manual_seed", "get_rng_state", "set_rng_state",
    "autocast", "cast", "cat", "cross_entropy", "dropout", "embedding", "gelu", "layer_norm", "log_softmax", "masked_fill",
    "matmul", "mse_loss", "permute", "relu", "reshape", "rms_norm", "scaled_dot_product_attention",
    "sigmoid", "softmax", "tanh", "transpose", "layernorm", "rmsnorm",
]
