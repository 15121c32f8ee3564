"""The matrix-chain lesson, analytic and executed: J = A_L ⋯ A_1 grouped from the input (forward mode) or from the
output (reverse mode).

The analytic counts are backend/tape/chain_cost.py's, at the widths asked for. The executed chain scales every
width down (the largest to at most the cap chain_executed_width, none below 1), draws the Jacobians A_k with a seeded
generator and multiplies them in each grouping with the engine's matmul, metered: the measured multiply-adds are
the registry's matmul FLOPs halved (a multiply-add is two FLOPs), and both groupings give the same J.
"""
import numpy as np

from backend.models.caps import cap
from backend.sweeps.meter import metering
from backend.tape import chain_cost, parameter


def scaled_widths(widths, largest=None):
    """Each width divided by the same factor so the largest is at most `largest` (the chain_executed_width cap when
    not given; rounded, at least 1)."""
    largest = largest or cap("chain_executed_width")
    factor = max(1.0, max(widths) / largest)
    return [max(1, round(n / factor)) for n in widths]


def matrix_chain(widths, seed=0):
    """{analytic: chain_multiply_adds(widths), executed: {widths, forward, reverse, agree}} — see the module."""
    small = scaled_widths(widths)
    rng = np.random.default_rng(seed)
    # parameters, so the engine records each product and counts its FLOPs as a trace would
    jacobians = [parameter(rng.standard_normal((small[k], small[k - 1]))) for k in range(1, len(small))]   # A_1 … A_L
    forward, forward_j = _metered(_from_input, jacobians)
    reverse, reverse_j = _metered(_from_output, jacobians)
    expected = chain_cost.chain_multiply_adds(small)
    return {
        "analytic": chain_cost.chain_multiply_adds(widths),
        "executed": {
            "widths": small,
            "forward": {**forward, "grouping": expected["forward_grouping"], "analytic_multiply_adds": expected["forward"]},
            "reverse": {**reverse, "grouping": expected["reverse_grouping"], "analytic_multiply_adds": expected["reverse"]},
            "max_abs_difference": float(np.max(np.abs(forward_j - reverse_j))),
        },
    }


def _from_input(jacobians):
    """A_L(⋯(A_2 A_1)): a JVP carries an n_k × n_0 block forward."""
    product = jacobians[0]
    for a in jacobians[1:]:
        product = a @ product
    return product


def _from_output(jacobians):
    """((A_L A_{L-1})⋯)A_1: a VJP carries an n_L × n_k block backward."""
    product = jacobians[-1]
    for a in reversed(jacobians[:-1]):
        product = product @ a
    return product


def _metered(group, jacobians):
    with metering() as meter:
        product = group(jacobians)
    return {"flops": meter.primal_flops, "multiply_adds": meter.primal_flops // 2}, product.data
