"""The exact integer program: which saved outputs to recompute, least recompute FLOPs under a memory budget.

Checkmate's formulation (Jain et al. 2020) at our engine's granularity. The choices are units: a recomputable
forward output together with the recomputable outputs it must re-derive from (its recipe chain), closed when
every other input it reads is stored anyway for as long as the recipe lives (the attention core is one:
scores, scaled, masked, softmax, dropout, back to the stored q and k). One binary per unit, r_u = 1 when the
unit's savers keep recipes instead of arrays. A unit changes live bytes at every step by a fixed vector (its
outputs freed early, transient copies at its savers' backward steps), taken from the exact predictor; units that
overlap or feed one another exclude each other, so the chosen units' vectors add up exactly. Then:

    minimise Σ flops_u·r_u   subject to   base_live[s] + Σ delta_u[s]·r_u ≤ budget   for every step s

solved with HiGHS (scipy.optimize.milp) under a time limit; the optimality gap is reported when it is hit.
"""
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from backend.planner.selective import predict_live_bytes


def holders_until(base, entry):
    """The last step a recipe for this entry's output is held: its Tensor, or its last saver's backward."""
    out = base.output(entry)
    steps = [out.get("dropped")] + [base.backward_step[s] for s in base.savers.get(out["id"], ())]
    return None if any(s is None for s in steps) else max(steps)


def unit_of(base, entry):
    """The closed recompute unit rooted at `entry` (a frozenset of entries), or None when there is none."""
    if not base.recomputable(entry):
        return None
    members, frontier = {entry}, [entry]
    while frontier:
        current = frontier.pop()
        for uid in base.tape[current]["inputs"]:
            producer = base.tensors[uid]["produced_by"]
            if producer in members:
                continue
            if _lives_long_enough(base, uid, members):
                continue
            if producer is None or base.tape[producer]["output"] != uid or not base.recomputable(producer, saved=False):
                return None
            members.add(producer)
            frontier.append(producer)
    return frozenset(members)


def _lives_long_enough(base, uid, members):
    until = [holders_until(base, m) for m in members]
    if any(u is None for u in until):
        return False
    freed = base.storages[base.tensors[uid]["storage"]]["freed"]
    return freed is None or freed >= max(until)


def units(base):
    found = {unit_of(base, e) for e in range(len(base.tape))}
    return sorted((u for u in found if u), key=lambda u: (min(u), len(u)))


class Program:
    """The budget-free part of the integer program for one base run: units, their deltas, costs, exclusions."""

    def __init__(self, base):
        self.base = base
        self.base_live = predict_live_bytes(base, ())
        self.choices = units(base)
        self.deltas = np.array([predict_live_bytes(base, u) - self.base_live for u in self.choices],
                               dtype=np.float64).reshape(len(self.choices), len(self.base_live))
        self.flops = np.array([max(sum(base.flops_of(e) for e in u), 1) for u in self.choices], dtype=np.float64)
        rows = []
        for i, a in enumerate(self.choices):
            for j in range(i + 1, len(self.choices)):
                if _interact(base, a, self.choices[j]):
                    row = np.zeros(len(self.choices))
                    row[i] = row[j] = 1
                    rows.append(row)
        self.exclusive = np.array(rows)

    def solve(self, budget_bytes, time_limit_s=10.0):
        """{entries, predicted_peak_bytes, recompute_flops, status, gap, solve_s} for the cheapest fitting choice."""
        started, base, base_live = time.perf_counter(), self.base, self.base_live
        if base_live.max() <= budget_bytes or not self.choices:
            status = "optimal" if base_live.max() <= budget_bytes else "infeasible"
            return _result(base, [], base_live, status, 0.0, started)
        constraints = [LinearConstraint(self.deltas.T, -np.inf, budget_bytes - base_live)]
        if len(self.exclusive):
            constraints.append(LinearConstraint(self.exclusive, -np.inf, 1))
        result = milp(self.flops, constraints=constraints, integrality=np.ones(len(self.choices)),
                      bounds=Bounds(0, 1), options={"time_limit": time_limit_s})
        if result.x is None:
            return _result(base, [], base_live, "infeasible" if result.status == 2 else "time limit", None, started)
        chosen = sorted(e for u, x in zip(self.choices, result.x) if x > 0.5 for e in u)
        status = "optimal" if result.status == 0 else "time limit"
        gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
        return _result(base, chosen, predict_live_bytes(base, chosen), status, gap, started)


def solve(base, budget_bytes, time_limit_s=10.0):
    """One solve from scratch (the planner keeps a Program and re-solves it per budget)."""
    return Program(base).solve(budget_bytes, time_limit_s)


def _interact(base, a, b):
    """Units that share an entry, or where one produces an input the other reads."""
    if a & b:
        return True
    outputs_a = {base.tape[e]["output"] for e in a}
    outputs_b = {base.tape[e]["output"] for e in b}
    return (any(uid in outputs_a for e in b for uid in base.tape[e]["inputs"])
            or any(uid in outputs_b for e in a for uid in base.tape[e]["inputs"]))


def _result(base, chosen, live, status, gap, started):
    return {"entries": chosen, "predicted_peak_bytes": int(live.max()),
            "recompute_flops": int(sum(base.flops_of(e) for e in chosen)), "status": status, "gap": gap,
            "solve_s": time.perf_counter() - started}
