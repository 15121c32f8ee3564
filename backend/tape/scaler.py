"""The loss scaler: torch.amp.GradScaler's arithmetic, so float16 gradients ride the exponent range.

The loss is multiplied by the scale before backward; the master gradients are multiplied by 1/scale (exact: the
scale is a power of two) before the optimizer; a step whose gradients hold an inf or NaN is skipped. The
dynamic policy (the tape chapter's): start at 2¹⁶, ×2 after `growth_interval` (2,000) clean steps in a row,
÷2 and the count reset on any inf/NaN. A fixed scale never changes; "none" is a scale of 1 that never skips.

Unscaling also measures, per gradient, the fraction of its elements that are not zero in float32 but become
zero in float16 without the scale (g) and with it (g × scale): what the scale rescues from underflow.
"""
import math

import numpy as np

from backend.tape import events
from backend.tape.grad_mode import no_grad

INIT_SCALE = 2.0 ** 16
GROWTH_INTERVAL = 2000
FLOAT16 = np.dtype(np.float16)


class LossScaler:
    def __init__(self, mode="dynamic", init_scale=INIT_SCALE, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=GROWTH_INTERVAL):
        """`mode`: "dynamic", "none", or a number (a fixed scale)."""
        self.dynamic = mode == "dynamic"
        if mode == "none":
            init_scale = 1.0
        elif not self.dynamic:
            init_scale = float(mode)
        self.mode = mode
        self.scale_value = np.float32(init_scale)         # GradScaler keeps its scale as a float32 tensor
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self.growth_tracker = 0                           # clean steps in a row since the last change
        self.found_inf = False
        self._unscaled = False
        self.used_scale = float(self.scale_value)         # the scale of the last scaled loss

    def scale(self, loss):
        """The loss times the scale: a recorded mul, so backward starts from the scale."""
        self.used_scale = float(self.scale_value)
        if self.mode == "none":
            return loss
        return loss * np.asarray(self.scale_value, dtype=loss.data.dtype)

    def unscale_(self, params):
        """Multiply every gradient by 1/scale in place, noting any inf/NaN and each gradient's underflow."""
        inv_scale = np.float32(1.0 / np.float64(self.scale_value))     # torch: scale.double().reciprocal().float()
        self.found_inf = False
        with no_grad():
            for p in params:
                if p.grad is None:
                    continue
                grad = p.grad
                if not np.all(np.isfinite(grad)):
                    self.found_inf = True
                grad *= inv_scale
                if events.active:
                    events.emit(events.UNSCALE, param=p, underflow=underflow_fractions(grad, self.scale_value))
        self._unscaled = True

    def step(self, optimizer):
        """Unscale (unless done already) and step the optimizer, or skip the step on inf/NaN. True if it stepped."""
        if not self._unscaled:
            self.unscale_(optimizer.params)
        self._unscaled = False
        if self.found_inf and self.mode != "none":
            return False
        optimizer.step()
        return True

    def update(self):
        """The dynamic policy after a step (torch's _amp_update_scale_); a fixed scale or "none" stays."""
        if not self.dynamic:
            return
        if self.found_inf:
            self.scale_value = np.float32(self.scale_value * np.float32(self.backoff_factor))
            self.growth_tracker = 0
            return
        self.growth_tracker += 1
        if self.growth_tracker == self.growth_interval:
            grown = np.float32(self.scale_value * np.float32(self.growth_factor))
            if math.isfinite(grown):
                self.scale_value = grown
            self.growth_tracker = 0

    def summary(self):
        """This step as the trace reports it: the scale it used, what the policy made of it, whether it skipped."""
        return {"mode": "fixed" if isinstance(self.mode, float) else self.mode, "scale": self.used_scale,
                "next_scale": float(self.scale_value), "growth_interval": self.growth_interval,
                "growth_tracker": self.growth_tracker, "found_inf": self.found_inf,
                "skipped_step": self.found_inf and self.mode != "none"}


def underflow_fractions(grad, scale):
    """{unscaled, scaled}: the fraction of `grad`'s elements that are nonzero but become 0 in float16, as they are
    and multiplied by `scale`."""
    grad = np.asarray(grad, dtype=np.float32)
    if grad.size == 0:
        return {"unscaled": 0.0, "scaled": 0.0}
    nonzero = grad != 0
    with np.errstate(over="ignore"):
        unscaled = nonzero & (grad.astype(FLOAT16) == 0)
        scaled = nonzero & ((grad * np.float32(scale)).astype(FLOAT16) == 0)
    return {"unscaled": float(unscaled.mean()), "scaled": float(scaled.mean())}
