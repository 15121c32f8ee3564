"""Layers around layers: residual (h + f(h)), repeat (the same layers N times) and no_grad (run unrecorded)."""
import math

import backend.tape as T
from backend.models.fields import Field
from backend.models.kinds.base import Kind, build_layers, chain, check_layers, plan_layers, register
from backend.tape import layer_scope


def _check_inner(layer, path, problems, out, depth):
    out["layers"] = check_layers(layer.get("layers"), f"{path}.layers", problems, depth + 1)
    return ("layers",)


def _plan_residual(layer, shape, path, problems, tally):
    flows, cut = tally.grad_flows, tally.input_cut
    out = plan_layers(layer["layers"], shape, f"{path}.layers", problems, tally)
    tally.input_cut, tally.on_input = cut, False        # the skip carries the input on; h + out is a new tensor
    if out is not None and out != shape:
        problems.add(f"{path}.layers", f"must keep the shape {list(shape)} so the skip can be added; "
                                       f"they end at {list(out)}")
        return None
    tally.grad_flows = tally.grad_flows or flows          # the skip carries the gradient past a cut branch
    tally.op(math.prod(shape))
    return shape


def _build_residual(layer, width, ctx, path):
    inner, out_width = build_layers(layer["layers"], width, ctx, f"{path}.layers")
    branch = chain(inner)

    def residual(h):
        out = branch(h)
        with layer_scope(path):
            return h + out          # h is used twice: its gradient is the skip's share plus the branch's
    return residual, out_width


register(Kind("residual", "h + layers(h): the layers must keep the shape; h's gradient is the skip's plus the "
              "branch's", _plan_residual, _build_residual, check=_check_inner, inner=({"type": "tanh"},)))


def _plan_repeat(layer, shape, path, problems, tally):
    for _ in range(layer["times"]):
        shape = plan_layers(layer["layers"], shape, f"{path}.layers", problems, tally)
        if shape is None:
            return None
    return shape


def _build_repeat(layer, width, ctx, path):
    fns = []
    for i in range(layer["times"]):
        inner, width = build_layers(layer["layers"], width, ctx, f"{path}[{i}]")
        fns.extend(inner)
    return chain(fns), width


register(Kind("repeat", "the layers, `times` times over, each time with fresh parameters", _plan_repeat,
              _build_repeat, check=_check_inner, inner=({"type": "relu"},), fields=(
                  Field("times", "integer", "how many copies of the layers, in a row", default=2, low=1,
                        cap="repeat"),
              )))


def _plan_no_grad(layer, shape, path, problems, tally):
    enabled = tally.grad_enabled
    tally.grad_enabled = False
    out = plan_layers(layer["layers"], shape, f"{path}.layers", problems, tally)
    tally.grad_enabled, tally.grad_flows = enabled, False
    tally.input_cut = tally.input_cut or f"{path} (no_grad)"
    return out


def _build_no_grad(layer, width, ctx, path):
    inner, out_width = build_layers(layer["layers"], width, ctx, f"{path}.layers")
    ctx.cut(path, "no_grad")
    run = chain(inner)

    def unrecorded(h):
        with T.no_grad():
            return run(h)
    return unrecorded, out_width


register(Kind("no_grad", "run the layers under torch.no_grad(): nothing recorded, nothing saved, and no gradient "
              "for them or anything before", _plan_no_grad, _build_no_grad, check=_check_inner,
              inner=({"type": "linear", "out": 16},)))
