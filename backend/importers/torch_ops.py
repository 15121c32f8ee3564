"""What the explorer knows about an aten op: its family (the graph's colour), its FLOPs (torch's own counter's
formula where it has one, ours otherwise), the tensors in its arguments and result, and which arguments it writes
into."""
import math

import torch
from torch.utils.flop_counter import flop_registry as TORCH_FLOP_FORMULAS   # what FlopCounterMode counts, by op
from torch.utils.flop_counter import shape_wrapper

TORCH, TAPESCOPE = "torch", "tapescope"     # a count's source: torch.utils.flop_counter's formula, or ours

# aten overload packet name -> family; anything else is drawn as "other"
_FAMILIES = {
    "matmul": ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addmv", "mv", "dot", "einsum",
               "convolution", "_convolution", "mkldnn_rnn_layer"),
    "elementwise": ("relu", "gelu", "tanh", "sigmoid", "exp", "log", "neg", "sqrt", "rsqrt", "silu", "abs",
                    "clamp", "pow", "reciprocal", "sin", "cos", "erf", "threshold", "hardtanh", "leaky_relu",
                    "softplus", "elu", "mish", "square", "sign", "clone", "copy", "fill", "zero", "where",
                    "masked_fill", "_to_copy", "lerp", "addcmul", "addcdiv", "maximum", "minimum"),
    "binary": ("add", "sub", "mul", "div", "rsub", "true_divide", "eq", "ne", "lt", "gt", "le", "ge"),
    "reduce": ("sum", "mean", "amax", "amin", "max", "min", "var", "std", "norm", "linalg_vector_norm",
               "logsumexp", "prod", "argmax"),
    "movement": ("view", "reshape", "_unsafe_view", "t", "transpose", "permute", "expand", "squeeze",
                 "unsqueeze", "slice", "select", "split", "split_with_sizes", "chunk", "cat", "stack",
                 "contiguous", "as_strided", "alias", "detach", "unbind", "index_select", "narrow",
                 "flatten", "unflatten", "repeat", "gather", "index", "embedding", "lift_fresh"),
    "normalization": ("native_layer_norm", "layer_norm", "native_batch_norm", "_native_batch_norm_legit",
                      "_native_batch_norm_legit_functional", "native_group_norm", "_fused_rms_norm",
                      "rms_norm", "_softmax", "softmax", "_log_softmax", "log_softmax"),
    "random": ("native_dropout", "dropout", "bernoulli", "rand", "randn", "rand_like", "randn_like",
               "randint", "uniform", "normal"),
    "loss": ("nll_loss_forward", "nll_loss", "nll_loss2d_forward", "mse_loss", "cross_entropy_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "l1_loss", "smooth_l1_loss",
             "huber_loss"),
    "attention": ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
                  "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
                  "_scaled_dot_product_attention_math"),
}
FAMILY_OF = {name: family for family, names in _FAMILIES.items() for name in names}
_SHAPE_WRAPPER_CODE = shape_wrapper(len).__code__     # the wrapper flop_counter puts around a shape formula


def op_name(func):
    """`aten.addmm.default` -> "addmm"; in-place `add_` keeps its underscore."""
    return op_info(func).name


class OpInfo:
    """What the recorder reads of an aten op on every call (its name, family, str, the arguments it writes into,
    torch's FLOP formula), worked out once per op overload: the recorder's hooks run on every op of the step."""
    __slots__ = ("func", "call", "name", "family", "aten", "written", "formula", "shape_formula", "unwritten", "writes")

    def __init__(self, func):
        self.func = func            # held, so the id keying _OP_INFO stays this op's
        # an OpOverload's __call__ is a Python frame around its C++ op: the recorder calls the op itself
        self.call = func._op if type(func) is torch._ops.OpOverload else func
        self.name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
        self.family = family(self.name)
        self.aten = str(func)
        self.written = _written_arguments(func)
        self.writes = bool(self.written[0] or self.written[1])
        self.unwritten = self.name in UNWRITTEN_OPS
        self.formula = TORCH_FLOP_FORMULAS.get(getattr(func, "overloadpacket", None))
        # flop_counter's shape_wrapper maps every argument to its shape with a pytree walk before the formula
        # runs; _shapes does the same walk over an aten op's arguments (tensors in tuples and lists) much cheaper
        wrapped = getattr(self.formula, "__wrapped__", None)
        self.shape_formula = wrapped if getattr(self.formula, "__code__", None) is _SHAPE_WRAPPER_CODE else None


_OP_INFO = {}       # id(func) -> OpInfo (an OpOverload's own __hash__ is a Python call; its id is not)


def op_info(func):
    info = _OP_INFO.get(id(func))
    if info is None:
        info = _OP_INFO[id(func)] = OpInfo(func)
    return info


def family(name):
    return FAMILY_OF.get(name.rstrip("_") if name not in FAMILY_OF else name, "other")


def flops(func, args, kwargs, out, inputs=None, outputs=None, info=None):
    """(FLOPs of one aten op, their source): FlopCounterMode's formula when torch has one for the op (mm family,
    convolution and its backward, attention kernels), else ours (`tapescope_flops`). `inputs`, `outputs` and
    `info` are what the caller has already worked out (op_tensors of the arguments and result, op_info)."""
    info = op_info(func) if info is None else info
    if info.shape_formula is not None:
        return int(info.shape_formula(*_shapes(args), out_shape=_shapes(out),
                                      **{key: _shapes(value) for key, value in kwargs.items()})), TORCH
    if info.formula is not None:
        return int(info.formula(*args, **kwargs, out_val=out)), TORCH
    if info.family == "movement" and info.name not in _RNN_LAYERS:
        return 0, TAPESCOPE         # what tapescope_flops says of any movement op, without listing its tensors
    inputs = op_tensors(args) + op_tensors(tuple(kwargs.values())) if inputs is None else inputs
    return tapescope_flops(info.name, inputs, op_tensors(out) if outputs is None else outputs, info.family), TAPESCOPE


def _shapes(value):
    """`value` with each tensor replaced by its shape, through tuples, lists and dicts (flop_counter's get_shape
    over a pytree)."""
    if isinstance(value, torch.Tensor):
        return value.shape
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(_shapes(item) for item in value)
    if kind is dict:
        return {key: _shapes(item) for key, item in value.items()}
    return value


def tapescope_flops(name, inputs, outputs, fam=None):
    """Ours, for ops torch's counter has no formula for: 2·m·n·k for matrix products, the gate products of an
    LSTM/GRU layer (twice that for its backward), one per output element otherwise (movement and views: zero)."""
    if name in _RNN_LAYERS and len(inputs) >= 3:
        x, w_ih, w_hh = inputs[:3]
        steps = x.numel() // max(x.shape[-1], 1)            # time steps × batch
        return int(_RNN_LAYERS[name] * 2 * steps * (w_ih.numel() + w_hh.numel()))
    fam = family(name) if fam is None else fam
    if fam == "movement" or not outputs:
        return 0
    out = outputs[0]
    if fam == "matmul" and inputs:
        a = inputs[-2] if len(inputs) >= 2 else inputs[0]
        inner = a.shape[-1] if a.dim() else 1
        return int(2 * out.numel() * inner)
    if fam == "attention" and len(inputs) >= 3:
        q, k = inputs[0], inputs[1]
        seq_k = k.shape[-2] if k.dim() >= 2 else 1
        return int(4 * q.numel() * seq_k)
    return int(math.prod(out.shape)) if out.dim() else 1


# Ops whose output is memory as the allocator left it: described when an op first writes into it, not at birth
UNWRITTEN_OPS = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided"})
# mkldnn's fused RNN layer (CPU nn.LSTM and nn.GRU): how many times the forward's gate products its op costs
_RNN_LAYERS = {"mkldnn_rnn_layer": 1, "mkldnn_rnn_layer_backward": 2}


def aten_name(func):
    """`aten.addmm.default`: an OpOverload's str, built once per op."""
    return op_info(func).aten


def op_tensors(value):
    """The tensors in an aten op's arguments or result: a tensor, or tuples and lists of them among scalars
    (what a pytree walk finds, without its cost on every op)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        found = []
        for item in value:
            if isinstance(item, torch.Tensor):
                found.append(item)
            elif isinstance(item, (tuple, list)):
                found.extend(op_tensors(item))
        return found
    return []


def written_arguments(func):
    """(positions, names) of the arguments an op writes into, from its schema's alias annotations (`Tensor(a!)`)."""
    return op_info(func).written


def _written_arguments(func):
    schema = getattr(func, "_schema", None)
    if schema is None:
        return (), ()
    written = [(i, arg) for i, arg in enumerate(schema.arguments)
               if arg.alias_info is not None and arg.alias_info.is_write]
    return (tuple(i for i, arg in written if not arg.kwarg_only),
            tuple(arg.name for _, arg in written if arg.kwarg_only))
