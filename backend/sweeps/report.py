"""The modes view's report for a spec: both Jacobians (of the loss and of the logits) built both ways, and one JVP
sweep stepped, all executed on the engine."""
import numpy as np

from backend.sweeps.jacobians import both_modes
from backend.sweeps.subject import subject_of
from backend.sweeps.tangent_steps import tangent_steps


def sweeps_needed(counts):
    """How many sweeps `modes_report` runs (what the work cap prices): n + 1 for the loss, n + m for the logits,
    the stepped sweep, and the two recorded forwards reverse mode starts from."""
    return 2 * counts["inputs"] + counts["logits"] + 1 + 1 + 2


def modes_report(spec, element=0, keep_jacobians=False):
    """{input, jacobians: {loss, logits}: {shape, forward, reverse, max_abs_difference}, jvp_sweep} for a
    normalized spec; `element`: the input element whose direction the stepped JVP sweep follows."""
    subject = subject_of(spec)
    n = subject.x.size
    jacobians = {}
    for name, fn, out_shape in (("loss", subject.loss, ()), ("logits", subject.logits, subject.logits_shape)):
        forward, reverse = both_modes(fn, subject.x, int(np.prod(out_shape)), subject.reseed)
        jacobians[name] = {
            "output_shape": list(out_shape), "output_elements": int(np.prod(out_shape)), "input_elements": n,
            "forward": forward.report(), "reverse": reverse.report(),
            "max_abs_difference": float(np.max(np.abs(forward.jacobian - reverse.jacobian), initial=0.0)),
        }
        if keep_jacobians:
            jacobians[name]["arrays"] = {"forward": forward.jacobian, "reverse": reverse.jacobian}
    return {
        "input": {"name": subject.input_name, "shape": list(subject.x.shape), "elements": n},
        "jacobians": jacobians,
        "jvp_sweep": tangent_steps(subject, element),
    }
