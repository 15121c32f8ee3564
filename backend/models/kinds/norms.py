"""Normalization layers over the last axis: layernorm (weight and bias) and rmsnorm (weight only)."""
import math

import backend.tape as T
from backend.models.kinds.base import Kind, register, scoped


def _planned_norm(weights):
    def plan(layer, shape, path, problems, tally):
        tally.params(weights * shape[-1])
        tally.op(math.prod(shape))
        return shape
    return plan


def _build_layernorm(layer, width, ctx, path):
    gamma, beta = ctx.constant_param(f"{path}.weight", width, 1.0), ctx.constant_param(f"{path}.bias", width, 0.0)
    return scoped(path, lambda h: T.layer_norm(h, gamma, beta)), width


def _build_rmsnorm(layer, width, ctx, path):
    gamma = ctx.constant_param(f"{path}.weight", width, 1.0)
    return scoped(path, lambda h: T.rms_norm(h, gamma)), width


register(Kind("layernorm", "(x - mean) / std · γ + β over the last axis", _planned_norm(2), _build_layernorm,
              params=True, unrecordable_op="layernorm"))
register(Kind("rmsnorm", "x / rms(x) · γ over the last axis", _planned_norm(2), _build_rmsnorm, params=True,
              unrecordable_op="rmsnorm"))
