"""The training-step knobs of a spec, declared once: `accumulate` (micro-batches per optimizer step) and
`precision` (autocast's compute dtype and the loss scaler), and the checks that tie them to the rest of a spec.

The 8-bit optimizer is one more option of spec.OPTIMIZER; what the knobs do to a run is backend/trace/run.py's.
"""
import numbers

from backend.models import fields as f
from backend.models.caps import cap
from backend.tape.scaler import INIT_SCALE
from backend.problems import join

ACCUMULATE = f.Field("accumulate", "integer", "micro-batches per optimizer step: that many forward/backward pairs "
                     "on batch/N rows each, .grad summing across them, then one step (N must divide batch)",
                     default=1, low=1, cap="accumulate", optional=True, step=1)


class LossScaleField(f.Field):
    """loss_scale: "dynamic", "none", or a number (a fixed scale); the schema shows the two words as options,
    the number's range as `number_min` / `number_max` and `number_default` (the dynamic policy's start), which
    the editor writes when "number" is chosen."""

    def __init__(self, default):
        super().__init__("loss_scale", "choice", 'the loss scaler: "dynamic" (start at 2¹⁶, ×2 after '
                         'growth_interval clean steps, ÷2 and skip the step on inf/NaN), a fixed number, or "none"',
                         default=default, options=("dynamic", "none"))

    def read(self, obj, path, problems):
        value = obj.get(self.name, self.default)
        if value in self.options:
            return value
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and 1 <= value <= cap("loss_scale"):
            return float(value)
        f.report(problems, join(path, self.name), f'"dynamic", "none" or {f.a_number(1, cap("loss_scale"))} '
                 "(a power of two such as 1024 unscales exactly)", value, of_type=f.is_number(value))
        return self.default

    def describe(self):
        return {**super().describe(), "number_min": 1, "number_max": cap("loss_scale"), "number_default": INIT_SCALE}


_GROWTH_INTERVAL = f.Field("growth_interval", "integer", "clean steps before the dynamic scale doubles (2,000 is "
                           "torch's)", default=2000, low=1, high=100_000)

PRECISION = f.Variants("precision", "compute", "mixed precision: float32 master weights, the forward in a low "
                       "precision (autocast), float32 master gradients", {
                           "float16": ("5 exponent bits: small gradients underflow without a loss scale",
                                       (LossScaleField("dynamic"), _GROWTH_INTERVAL)),
                           "bfloat16": ("float32's 8 exponent bits, 7 mantissa bits: no scale needed",
                                        (LossScaleField("none"), _GROWTH_INTERVAL)),
                       }, default="float16")


def read_precision(spec, problems):
    """The normalized precision object, or None when the spec has none (a plain float run)."""
    value = spec.get("precision")
    return None if value is None else PRECISION.read(value, problems)


def check_training(normalized, problems):
    """Problems between the knobs and the rest of the spec (after each field is read on its own)."""
    accumulate = normalized.get("accumulate", 1)
    batch = normalized["batch"]
    if batch % accumulate:
        divisors = [n for n in range(1, min(batch, 16) + 1) if batch % n == 0]
        problems.add("accumulate", f"must divide batch ({batch}) into equal micro-batches: try "
                                   + ", ".join(str(n) for n in divisors))
    if "precision" in normalized and normalized["dtype"] != "float32":
        problems.add("precision", f'keeps float32 master weights, so it needs dtype "float32", not '
                                  f'"{normalized["dtype"]}": set dtype to "float32" or remove precision')
