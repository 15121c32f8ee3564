"""The matrix-chain lesson: the multiply-adds of a Jacobian chain J = A_L ⋯ A_1 grouped as forward or reverse mode.

Layer k maps width n_{k-1} to n_k, so its Jacobian A_k is n_k × n_{k-1}. Forward mode (JVPs) groups from the
input side, A_L(⋯(A_2 A_1)), carrying an n_k × n_0 block; reverse mode (VJPs) groups from the output side,
((A_L A_{L-1})⋯)A_1, carrying an n_L × n_k block. An (a × b)(b × c) product costs a·b·c multiply-adds. For a
scalar loss (n_L = 1) the reverse grouping only ever multiplies a row by a matrix: at widths
4096 → 4096 → 4096 → 1 that is 33,554,432 multiply-adds against forward's 68,736,253,952.
"""


def chain_multiply_adds(widths):
    """{"forward", "reverse", "cheaper", "forward_grouping", "reverse_grouping"} for widths n_0 … n_L (L ≥ 2)."""
    widths = [int(n) for n in widths]
    if len(widths) < 3 or min(widths) < 1:
        raise ValueError("give at least three positive widths n_0 … n_L (a chain of at least two Jacobians)")
    layers = len(widths) - 1
    first, last = widths[0], widths[-1]
    forward = sum(widths[k] * widths[k - 1] * first for k in range(2, layers + 1))
    reverse = sum(last * widths[k] * widths[k - 1] for k in range(1, layers))
    names = [f"A{k}" for k in range(layers, 0, -1)]            # A_L first, as the product is written
    return {
        "widths": widths,
        "forward": forward,
        "reverse": reverse,
        "cheaper": "reverse" if reverse < forward else "forward" if forward < reverse else "equal",
        "forward_grouping": _grouped(names, from_left=False),
        "reverse_grouping": _grouped(names, from_left=True),
    }


def _grouped(names, from_left):
    """"(A3·A2)·A1" (reverse: from the output) or "A3·(A2·A1)" (forward: from the input)."""
    if from_left:
        text = names[0]
        for i, name in enumerate(names[1:]):
            text = f"({text}·{name})" if i < len(names) - 2 else f"{text}·{name}"
        return text
    text = names[-1]
    for i, name in enumerate(reversed(names[:-1])):
        text = f"({name}·{text})" if i < len(names) - 2 else f"{name}·{text}"
    return text
