"""Schedules: a policy's plan, predicted from the base run and executed under the recorder, side by side.

A plan either checkpoints regions of blocks (re-run in backward) or recomputes chosen outputs (selective
recomputation); each has its own exact predictor over the same base run.
"""
import math
import time
from dataclasses import dataclass, field
from functools import cached_property

from backend.planner import ilp, policies
from backend.planner.base_run import BaseRun
from backend.planner.execute import grad_mismatch, record_regions
from backend.planner.plannable import refuse_unplannable
from backend.planner.selective import SelectiveBase
from backend.planner.selective import predict_live_bytes as predict_selective
from backend.planner.timeline import predict_live_bytes as predict_regions
from backend.trace import deadline
from backend.trace.memory import peak
from backend.trace.run import record, record_peak

PARETO_BUDGETS = 8              # the sweep solves the program at most this many + 1 times


@dataclass(frozen=True)
class SolveLimits:
    """Time limits for the integer program: the requested "optimal" plan's solve, and the whole sweep's."""
    requested_s: float = 3.0
    sweep_s: float = 1.5


@dataclass(frozen=True)
class Plan:
    regions: tuple = ()                 # tuples of consecutive block indices, each under checkpoint()
    recompute: tuple = ()               # forward tape indices whose outputs are recomputed, not saved
    solver: dict = field(default=None, compare=False)


class Planner:
    """Everything the schedules of one spec share: the base (un-checkpointed) run and its gradients.

    The base run is recorded once; every prediction, the program, the sweep and the region search read it. Each
    distinct plan is executed (recorded) at most once: its executed peak and gradient check are kept by plan.
    """

    def __init__(self, spec, limits=SolveLimits()):
        refuse_unplannable(spec)                   # before the base run: the spec's own reasons
        self.spec, self.limits = spec, limits
        self.base_document, self.base_grads = record_regions(spec, [])
        deadline.check()
        refuse_unplannable(spec, self.base_document["error"])
        self.base = BaseRun.from_document(self.base_document)
        self.selective_base = SelectiveBase(self.base)
        self.program = ilp.Program(self.selective_base)
        self.units = self.program.choices
        self._peaks, self._flops = {}, {}          # memo per plan: the Pareto sweep scores plans many times
        self._executed = {}                        # (plan, preserve_rng_state) -> executed peak, grad mismatch
        self.forward_flops = sum(self.base.flops) or 1
        self.entry_activations = self._entry_activations()
        self._saved_activations = {t["id"] for t in self.base_document["tensors"]
                                   if t["saved_by"] and t["id"] in self.entry_activations}

    def _entry_activations(self):
        """tensor id -> forward tape index for the activations the forward produced (outputs and extras)."""
        return {t["id"]: t["produced_by"] for t in self.base_document["tensors"]
                if t["kind"] == "activation" and t["produced_by"] is not None
                and t["produced_by"] < len(self.base.flops)}

    # ----- policies -> plans --------------------------------------------------------------------------
    def plan(self, request):
        policy, params, n = request["policy"], request["params"], self.base.n_blocks
        if policy == "none":
            return Plan()
        if policy == "every_k":
            return Plan(regions=self._regions(policies.every_k(n, params["k"])))
        if policy == "sqrt":
            return Plan(regions=self._regions(policies.every_k(n, policies.sqrt_k(n))))
        if policy == "selective":
            return Plan(recompute=tuple(policies.selective_entries(self.selective_base, self.units)))
        if policy == "manual":
            return Plan(recompute=tuple(policies.manual_entries(self.selective_base, params["recompute"])))
        if policy == "optimal":
            return self.optimal(params["budget_bytes"])
        raise AssertionError(policy)

    def _regions(self, regions):
        """Regions as tuples, of the blocks a checkpoint may hold (_regionable_blocks); a region with a block left
        out splits into the runs around it."""
        kept, runs = self._regionable_blocks, []
        for region in regions:
            run = []
            for block in region:
                if block in kept:
                    run.append(block)
                elif run:
                    runs.append(tuple(run))
                    run = []
            if run:
                runs.append(tuple(run))
        return tuple(runs)

    @cached_property
    def _regionable_blocks(self):
        """The blocks a checkpoint may hold, worked out once from the base run. Left out: the blocks whose ops
        backward never runs, those the base run recorded nothing for (a relu or dropout on the raw input, before any
        parameter) and those before a detach or a no_grad cut (recorded, but no gradient reaches them): nothing of
        theirs is recomputed in backward, and the predictor has no backward steps to place their checkpoint's on. A
        block holding both (a residual around a detach) is left out when an op no gradient reaches saves something in
        it; so are _overwriting_blocks and _blocks_opening_unrecorded."""
        reached, cut_off = set(), set()
        for entry, block in enumerate(self.base.entry_block):
            if entry in self.base.first_backward_step:
                reached.add(block)
            elif entry in self.base.saving_entries:
                cut_off.add(block)
        return reached - cut_off - self._overwriting_blocks() - self._blocks_opening_unrecorded()

    @cached_property
    def _first_recorded_steps(self):
        """block -> the base step of its first recorded forward op."""
        base, first = self.base, {}
        for entry, block in enumerate(base.entry_block):
            if block is not None and entry in base.forward_step:
                first[block] = min(first.get(block, base.forward_step[entry]), base.forward_step[entry])
        return first

    def _blocks_opening_unrecorded(self):
        """The blocks whose first op runs under no_grad (a no_grad first in a repeated block): the predictor does not
        place such a block's checkpointed forward (it was 48 B under on a repeat of [no_grad, linear]), so they are
        not checkpointed. Autocast's unrecorded cast of an input, first in the first block, is placed: it stays."""
        first = dict(self._first_recorded_steps)
        for step, (_micro, block) in self.base.unrecorded_block.items():
            first[block] = min(first.get(block, step), step)
        steps = self.base_document["steps"]
        return {block for step, (_micro, block) in self.base.unrecorded_block.items()
                if first.get(block) == step and "autocast" not in steps[step]}

    def _overwriting_blocks(self):
        """The blocks with an in-place op writing into a storage born before the block's first op (its input, or
        earlier): checkpointed, the block's recompute would read what the write left, not what forward read."""
        base, first_step, blocks = self.base, self._first_recorded_steps, set()
        born = {st["id"]: st["born"] for st in base.storages}
        for tensor in self.base_document["tensors"]:
            for write in tensor.get("versions", ()):
                phase, entry = base.steps[write["step"]]
                block = base.entry_block[entry] if phase == "forward" and entry is not None and entry < len(base.entry_block) else None
                if block is not None and born[tensor["storage"]] < first_step.get(block, -1):
                    blocks.add(block)
        return blocks

    def heuristic_plans(self):
        n = self.base.n_blocks
        plans = [Plan(), *(Plan(regions=self._regions(policies.every_k(n, k))) for k in policies.sweep_ks(n)),
                 Plan(regions=self._regions(policies.chain_optimum(self.base))),
                 Plan(recompute=tuple(policies.selective_entries(self.selective_base, self.units)))]
        return list(dict.fromkeys(plans))

    def optimal(self, budget_bytes, time_limit_s=None):
        """The least recompute whose predicted peak fits: the integer program over recompute units, against
        every region schedule (the chain DP's included). Infeasible budgets get the lowest peak found."""
        limit_s = self.limits.requested_s if time_limit_s is None else time_limit_s
        solved = self.program.solve(budget_bytes, deadline.limit(limit_s))
        deadline.check()
        ilp_plan = Plan(recompute=tuple(solved["entries"]), solver={k: solved[k] for k in ("status", "gap", "solve_s")})
        scored = [(self.predicted_peak(p), self.recompute_flops(p), p) for p in [*self.heuristic_plans(), ilp_plan]]
        fitting = [s for s in scored if s[0] <= budget_bytes]
        if not fitting:
            return min(scored, key=lambda s: (s[0], s[1]))[2]
        return min(fitting, key=lambda s: (s[1], s[0]))[2]

    # ----- measures ---------------------------------------------------------------------------------------
    def predicted_peak(self, plan):
        if plan not in self._peaks:
            deadline.check()
            live = (predict_selective(self.selective_base, plan.recompute) if plan.recompute
                    else predict_regions(self.base, [list(r) for r in plan.regions]))
            self._peaks[plan], _ = peak(live)
        return self._peaks[plan]

    def recompute_flops(self, plan):
        if plan not in self._flops:
            if plan.recompute:
                flops = sum(self.selective_base.flops_of(e) for e in plan.recompute)
            else:
                blocks = {b for region in plan.regions for b in region}
                flops = sum(f for f, b in zip(self.base.flops, self.base.entry_block) if b in blocks)
            self._flops[plan] = int(flops)
        return self._flops[plan]

    def recomputed_tensors(self, plan):
        if plan.recompute:
            return sorted(self.selective_base.tape[e]["output"] for e in plan.recompute)
        blocks = {b for region in plan.regions for b in region}
        return sorted(t for t, e in self.entry_activations.items() if self.base.entry_block[e] in blocks)

    def schedule(self, request, execute=True, keep_document=True):
        """The schedule for a normalized request; `execute` runs it for the executed peak and gradients (once
        per distinct plan); `keep_document` adds that run's trace document under "document"."""
        plan = self.plan(request)
        recomputed = self.recomputed_tensors(plan)
        kept = self._saved_activations - set(recomputed)
        stored = sorted(kept)
        recompute_flops = self.recompute_flops(plan)
        predicted = self.predicted_peak(plan)
        schedule = {
            "policy": request["policy"], "params": request["params"],
            "preserve_rng_state": request["preserve_rng_state"],
            "regions": [[f"block {b}" for b in region] for region in plan.regions],
            "block_regions": [list(region) for region in plan.regions],
            "recompute_entries": list(plan.recompute),
            "stored": stored, "recomputed": recomputed,
            "predicted_peak_bytes": predicted, "executed_peak_bytes": None,
            "recompute_flops": recompute_flops, "overhead": recompute_flops / self.forward_flops,
            "grads_match": None, "grad_mismatch": None,
        }
        if request["policy"] == "optimal":
            schedule["feasible"] = predicted <= request["params"]["budget_bytes"]
            schedule["solver"] = plan.solver
        if execute:
            key = (plan, request["preserve_rng_state"])
            document = None
            if keep_document:
                document, grads = self.execute(*key)
                summary = document["summary"]
                self._executed[key] = (summary["peak_bytes"], summary["peak"], grad_mismatch(grads, self.base_grads))
            elif key not in self._executed:
                peak, explained, grads = self.execute_peak(*key)
                self._executed[key] = (peak, explained, grad_mismatch(grads, self.base_grads))
            peak, explained, mismatch = self._executed[key]
            schedule.update(executed_peak_bytes=peak, grad_mismatch=dict(mismatch),
                            grads_match=all(v == 0.0 for v in mismatch.values()),
                            verdict=explained["verdict"])          # why this schedule's peak is where it is
            if keep_document:
                schedule["document"] = document
        return schedule

    def execute(self, plan, preserve_rng_state=True):
        deadline.check()
        if plan.recompute:
            return record(self.spec, (), preserve_rng_state, recompute=plan.recompute)
        if plan.regions:
            return record_regions(self.spec, plan.regions, preserve_rng_state)
        return self.base_document, self.base_grads       # nothing checkpointed: the base run is this run

    def execute_peak(self, plan, preserve_rng_state=True):
        """(executed peak bytes, summary.peak, gradients) of a plan, recorded without values or a document."""
        deadline.check()
        if not plan.recompute and not plan.regions:
            summary = self.base_document["summary"]
            return summary["peak_bytes"], summary["peak"], self.base_grads
        return record_peak(self.spec, [list(r) for r in plan.regions], preserve_rng_state, plan.recompute or None)

    def pareto(self):
        """Budget sweep from the smallest feasible peak to no checkpointing: the non-dominated points."""
        scored = {(self.predicted_peak(p), self.recompute_flops(p)) for p in self.heuristic_plans()}
        top = max(peak for peak, _ in scored)
        low = min(peak for peak, _ in scored)
        budgets = sorted({int(low + (top - low) * i / PARETO_BUDGETS) for i in range(PARETO_BUDGETS + 1)})
        sweep_ends = time.perf_counter() + self.limits.sweep_s        # the solves share one time limit
        for left, budget in zip(range(len(budgets), 0, -1), budgets):
            plan = self.optimal(budget, max(0.01, (sweep_ends - time.perf_counter()) / left))
            scored.add((self.predicted_peak(plan), self.recompute_flops(plan)))
        frontier, best_flops = [], math.inf
        for peak, flops in sorted(scored):
            if flops < best_flops:
                frontier.append({"budget_bytes": peak, "predicted_peak_bytes": peak, "recompute_flops": flops,
                                 "overhead": flops / self.forward_flops})
                best_flops = flops
        return frontier
