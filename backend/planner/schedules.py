"""Schedules: a policy's regions, predicted from the base run and executed under the recorder, side by side."""
import math

from backend.planner import policies
from backend.planner.execute import grad_mismatch, record_regions
from backend.planner.timeline import BaseRun, predict_live_bytes


class Planner:
    """Everything the schedules of one spec share: the base (un-checkpointed) run and its gradients."""

    def __init__(self, spec):
        self.spec = spec
        self.base_document, self.base_grads = record_regions(spec, [])
        self.base = BaseRun.from_document(self.base_document)
        self.forward_flops = sum(self.base.flops) or 1
        self.entry_activations = self._entry_activations()

    def _entry_activations(self):
        """tensor id -> forward tape index for the activations the forward produced (outputs and extras)."""
        out = {}
        for t in self.base_document["tensors"]:
            if t["kind"] == "activation" and t["produced_by"] is not None and t["produced_by"] < len(self.base.flops):
                out[t["id"]] = t["produced_by"]
        return out

    # ----- policies -> regions ------------------------------------------------------------------------
    def regions(self, request):
        policy, params, n = request["policy"], request["params"], self.base.n_blocks
        if policy == "none":
            return []
        if policy == "every_k":
            return policies.every_k(n, params["k"])
        if policy == "sqrt":
            return policies.every_k(n, policies.sqrt_k(n))
        if policy == "selective":
            return self._selective()
        if policy == "manual":
            blocks = {t: self.base.entry_block[e] for t, e in self.entry_activations.items()}
            return policies.manual_regions(self.base, blocks, params["recompute"])
        if policy == "optimal":
            return self.optimal(params["budget_bytes"])[0]
        raise AssertionError(policy)

    def _selective(self):
        """Blocks whose activations are mostly cheap per byte (not matmul outputs), each its own region."""
        matmul_bytes = [0] * self.base.n_blocks
        all_bytes = [0] * self.base.n_blocks
        nbytes = {t["id"]: t["nbytes"] for t in self.base_document["tensors"]}
        tape = self.base_document["tape"]
        for t, entry in self.entry_activations.items():
            block = self.base.entry_block[entry]
            if block is None:
                continue
            all_bytes[block] += nbytes[t]
            if tape[entry]["family"] == "matmul":
                matmul_bytes[block] += nbytes[t]
        return [[b] for b in range(self.base.n_blocks) if all_bytes[b] and matmul_bytes[b] * 2 < all_bytes[b]]

    def candidates(self):
        """Every region set the heuristics and the chain DP propose, with its predicted peak and recompute."""
        n = self.base.n_blocks
        seen, out = set(), []
        for regions in [[], *[policies.every_k(n, k) for k in range(1, n + 1)], policies.chain_optimum(self.base),
                        self._selective()]:
            key = tuple(map(tuple, regions))
            if key not in seen:
                seen.add(key)
                out.append((self.predicted_peak(regions), self.recompute_flops(regions), regions))
        return out

    def optimal(self, budget_bytes):
        """(regions, feasible): the least recompute whose predicted peak fits the budget."""
        candidates = self.candidates()
        fitting = [c for c in candidates if c[0] <= budget_bytes]
        if not fitting:
            return min(candidates, key=lambda c: (c[0], c[1]))[2], False
        return min(fitting, key=lambda c: (c[1], c[0]))[2], True

    # ----- measures ---------------------------------------------------------------------------------------
    def predicted_peak(self, regions):
        return int(predict_live_bytes(self.base, regions).max())

    def recompute_flops(self, regions):
        blocks = {b for region in regions for b in region}
        return int(sum(f for f, b in zip(self.base.flops, self.base.entry_block) if b in blocks))

    def schedule(self, request, execute=True):
        """The schedule document for a normalized request; `execute` runs it for executed peak and grads."""
        regions = self.regions(request)
        blocks = {b for region in regions for b in region}
        recomputed = sorted(t for t, e in self.entry_activations.items() if self.base.entry_block[e] in blocks)
        recomputed_set = set(recomputed)
        stored = sorted(t for t in self.entry_activations if t not in recomputed_set and t in self._saved_ids())
        recompute_flops = self.recompute_flops(regions)
        schedule = {
            "policy": request["policy"], "params": request["params"],
            "preserve_rng_state": request["preserve_rng_state"],
            "regions": [[f"block {b}" for b in region] for region in regions],
            "block_regions": [list(region) for region in regions],
            "stored": stored, "recomputed": recomputed,
            "predicted_peak_bytes": self.predicted_peak(regions),
            "executed_peak_bytes": None, "recompute_flops": recompute_flops,
            "overhead": recompute_flops / self.forward_flops, "grads_match": None, "grad_mismatch": None,
        }
        if request["policy"] == "optimal":
            schedule["feasible"] = self.predicted_peak(regions) <= request["params"]["budget_bytes"]
        if execute:
            if regions:
                document, grads = record_regions(self.spec, regions, request["preserve_rng_state"])
            else:                       # nothing checkpointed: the base run is this run
                document, grads = self.base_document, self.base_grads
            mismatch = grad_mismatch(grads, self.base_grads)
            schedule["executed_peak_bytes"] = document["summary"]["peak_bytes"]
            schedule["grad_mismatch"] = mismatch
            schedule["grads_match"] = all(v == 0.0 for v in mismatch.values())
            schedule["document"] = document
        return schedule

    def _saved_ids(self):
        if not hasattr(self, "_saved"):
            self._saved = {t["id"] for t in self.base_document["tensors"] if t["saved_by"]}
        return self._saved

    def pareto(self):
        """Budget sweep from the smallest feasible peak to no checkpointing: the non-dominated (peak, recompute)."""
        points = sorted((peak, flops) for peak, flops, _ in self.candidates())
        frontier, best_flops = [], math.inf
        for peak, flops in points:
            if flops < best_flops:
                frontier.append({"budget_bytes": peak, "predicted_peak_bytes": peak, "recompute_flops": flops,
                                 "overhead": flops / self.forward_flops})
                best_flops = flops
        return frontier
