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
from scipy.sparse import coo_array

from backend.models.caps import cap
from backend.planner.selective import live_changes, predict_live_bytes
from backend.trace.memory import live_bytes, peak



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
    held = holders_until(base, entry)          # the members' recipes are all gone after this step (None: never)
    while frontier:
        current = frontier.pop()
        for uid in base.tape[current]["inputs"]:
            producer = base.tensors[uid]["produced_by"]
            if producer in members or _lives_long_enough(base, uid, held):
                continue
            if producer is None or base.tape[producer]["output"] != uid or not base.recomputable(producer, saved=False):
                return None
            if len(members) >= cap("recompute_chain"):   # longer: re-run per saver, not offered
                return None
            members.add(producer)
            frontier.append(producer)
            until = holders_until(base, producer)
            held = None if held is None or until is None else max(held, until)
    return frozenset(members)


def _lives_long_enough(base, uid, held):
    if held is None:
        return False
    freed = base.storages[base.tensors[uid]["storage"]]["freed"]
    return freed is None or freed >= held


def units(base):
    found = {unit_of(base, e) for e in range(len(base.tape))}
    return sorted((u for u in found if u), key=lambda u: (min(u), len(u)))


def interacting_pairs(base, choices):
    """Index pairs (i < j) of units that share an entry, or where one produces an input the other reads."""
    by_entry, by_output = {}, {}
    for i, unit in enumerate(choices):
        for e in unit:
            by_entry.setdefault(e, []).append(i)
            by_output.setdefault(base.tape[e]["output"], []).append(i)
    pairs = set()
    for i, unit in enumerate(choices):
        for e in unit:
            near = by_entry[e] + [j for uid in base.tape[e]["inputs"] for j in by_output.get(uid, ())]
            pairs.update((min(i, j), max(i, j)) for j in near if j != i)
    return sorted(pairs)


class Program:
    """The budget-free part of the integer program for one base run: units, their deltas, costs, exclusions.

    A unit's delta is a handful of difference points (selective.live_changes), so live bytes are carried by
    one continuous variable per stretch of steps between points, y_k = y_(k-1) + Σ change_u(k)·r_u, bounded by
    the budget less the stretch's highest base bytes: the matrix has O(units) entries, not units × steps.
    """

    def __init__(self, base):
        self.base = base
        self.base_live = predict_live_bytes(base, ())
        self.choices = units(base)
        self.flops = np.array([max(sum(base.flops_of(e) for e in u), 1) for u in self.choices], dtype=np.float64)
        self.exclusive = interacting_pairs(base, self.choices)
        n_steps = len(self.base_live)
        changes = [_merged(live_changes(base, unit), n_steps) for unit in self.choices]
        points = sorted({0} | {step for unit in changes for step in unit})
        self.stretch_peak = np.maximum.reduceat(self.base_live, points).astype(np.float64)
        stretch_of = {step: k for k, step in enumerate(points)}
        n_units, n_stretches = len(self.choices), len(points)
        rows, cols, values = [], [], []
        for k in range(n_stretches):                           # y_k - y_(k-1) - Σ change·r = 0
            rows.append(k); cols.append(n_units + k); values.append(1.0)
            if k:
                rows.append(k); cols.append(n_units + k - 1); values.append(-1.0)
        for u, unit in enumerate(changes):
            for step, nbytes in unit.items():
                rows.append(stretch_of[step]); cols.append(u); values.append(-float(nbytes))
        self.balance = coo_array((values, (rows, cols)), shape=(n_stretches, n_units + n_stretches)).tocsr()
        self.n_units = n_units
        self.floor_bytes = _floor(self.base_live, changes)

    def solve(self, budget_bytes, time_limit_s=10.0):
        """{entries, predicted_peak_bytes, recompute_flops, status, gap, solve_s} for the cheapest fitting choice."""
        started, base, base_live = time.perf_counter(), self.base, self.base_live
        if base_live.max() <= budget_bytes or not self.choices or self.floor_bytes > budget_bytes:
            status = "optimal" if base_live.max() <= budget_bytes else "infeasible"
            return _result(base, [], base_live, status, 0.0 if status == "optimal" else None, started)
        n_stretches = len(self.stretch_peak)
        constraints = [LinearConstraint(self.balance, 0.0, 0.0)]
        if self.exclusive:
            pairs = np.array(self.exclusive)
            rows = np.repeat(np.arange(len(pairs)), 2)
            matrix = coo_array((np.ones(2 * len(pairs)), (rows, pairs.ravel())),
                               shape=(len(pairs), self.n_units + n_stretches)).tocsr()
            constraints.append(LinearConstraint(matrix, -np.inf, 1))
        cost = np.concatenate([self.flops, np.zeros(n_stretches)])
        integrality = np.concatenate([np.ones(self.n_units), np.zeros(n_stretches)])
        lower = np.concatenate([np.zeros(self.n_units), np.full(n_stretches, -np.inf)])
        upper = np.concatenate([np.ones(self.n_units), budget_bytes - self.stretch_peak])
        result = milp(cost, constraints=constraints, integrality=integrality, bounds=Bounds(lower, upper),
                      options={"time_limit": time_limit_s})
        if result.x is None:
            return _result(base, [], base_live, "infeasible" if result.status == 2 else "time limit", None, started)
        chosen = sorted(e for u, x in zip(self.choices, result.x[:self.n_units]) if x > 0.5 for e in u)
        status = "optimal" if result.status == 0 else "time limit"
        gap = float(getattr(result, "mip_gap", 0.0) or 0.0)
        return _result(base, chosen, predict_live_bytes(base, chosen), status, gap, started)


def solve(base, budget_bytes, time_limit_s=10.0):
    """One solve from scratch (the planner keeps a Program and re-solves it per budget)."""
    return Program(base).solve(budget_bytes, time_limit_s)


def _floor(base_live, changes):
    """A peak no choice of units can go below: every unit's savings taken at once, exclusions ignored. A budget
    under it is infeasible without asking the solver (the sweep's low budgets often are). A unit saves where its
    running change is below zero: each such stretch is a lifetime of negative bytes."""
    savings = []
    for unit in changes:
        level, previous = 0, 0
        for step in sorted(unit):
            if level < 0:
                savings.append((previous, step - 1, level))
            level, previous = level + unit[step], step
        if level < 0:
            savings.append((previous, None, level))
    return int((base_live + live_bytes(savings, len(base_live))).max())


def _merged(changes, n_steps):
    """Difference points summed per step, dropping those past the last step and those that cancel."""
    merged = {}
    for step, nbytes in changes:
        if step < n_steps:
            merged[step] = merged.get(step, 0) + nbytes
    return {step: nbytes for step, nbytes in merged.items() if nbytes}


def _result(base, chosen, live, status, gap, started):
    return {"entries": chosen, "predicted_peak_bytes": peak(live)[0],
            "recompute_flops": int(sum(base.flops_of(e) for e in chosen)), "status": status, "gap": gap,
            "solve_s": time.perf_counter() - started}
