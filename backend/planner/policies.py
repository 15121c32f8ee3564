"""Checkpoint policies: regions of blocks to re-run (every_k, sqrt, the chain DP) or outputs to recompute
(selective, manual), and the validation of a checkpoint request."""
import math

from backend.models import fields
from backend.models.caps import cap
from backend.models.errors import SpecError
from backend.problems import Problems
from backend.trace.recompute import refusal

from backend.planner.chain import min_peak_segments

POLICIES = ("none", "every_k", "sqrt", "selective", "optimal", "manual")


class PolicyError(SpecError):
    """A checkpoint request the planner cannot run: a request problem like a spec's, {path, message} each,
    so every caller that refuses a bad spec with a 400 refuses a bad checkpoint the same way."""


def every_k(n_blocks, k):
    """Checkpoint the model in segments of k blocks (checkpoint_sequential)."""
    return [list(range(start, min(start + k, n_blocks))) for start in range(0, n_blocks, k)]


def sqrt_k(n_blocks):
    return max(1, round(math.sqrt(n_blocks)))


def sweep_ks(n_blocks, every_up_to=16, growth=1.5):
    """The segment lengths the planner scores: every k up to 16, then each about 1.5x the last, then sqrt and L.

    O(log L) of them, so scoring every_k costs O(L log L) however deep the model is.
    """
    ks, k = set(range(1, min(n_blocks, every_up_to) + 1)), every_up_to
    while k < n_blocks:
        k = max(k + 1, int(k * growth))
        ks.add(min(k, n_blocks))
    return sorted(ks | {sqrt_k(n_blocks), n_blocks})


def chain_optimum(base):
    """The chain DP's minimum-peak segmentation over the blocks' boundary and internal activation bytes."""
    layer_bytes, boundary_bytes = block_bytes(base)
    _peak, segments = min_peak_segments(layer_bytes, boundary_bytes)
    return [list(range(start, end)) for start, end in segments]


def block_bytes(base):
    """(activation bytes born inside each block, bytes of each block's input) from the base run."""
    layer_bytes = [0] * base.n_blocks
    boundary_bytes = [0] * base.n_blocks
    forward_entry_at = {s: e for s, (phase, e) in enumerate(base.steps) if phase == "forward" and e is not None}
    for st in base.storages:
        entry = forward_entry_at.get(st["born"])
        if entry is None or st["kind"] != "activation":
            continue
        block = base.entry_block[entry]
        if block is not None:
            layer_bytes[block] += st["nbytes"]
    nbytes = {st["id"]: st["nbytes"] for st in base.storages}
    for entry, block in enumerate(base.entry_block):
        if block is not None and block + 1 < base.n_blocks and base.entry_block[entry + 1:entry + 2] != [block]:
            boundary_bytes[block + 1] = nbytes.get(base.output_storage.get(entry), 0)
    return layer_bytes, boundary_bytes


def selective_entries(selective_base, units):
    """Korthikanti et al.'s selective recomputation: store what matmuls against weights produce; recompute the
    cheap-per-byte rest (elementwise, softmax, dropout, the attention scores), a closed unit at a time."""
    chosen, taken, outputs, inputs = [], set(), set(), set()
    for unit in units:
        if any(_weight_matmul(selective_base, e) for e in unit) or unit & taken:
            continue
        unit_outputs = {selective_base.tape[e]["output"] for e in unit}
        unit_inputs = {uid for e in unit for uid in selective_base.tape[e]["inputs"]}
        if unit_outputs & inputs or unit_inputs & outputs:
            continue            # units that feed each other chain their recipes: one re-run per link per saver
        chosen.append(unit)
        taken |= unit
        outputs |= unit_outputs
        inputs |= unit_inputs
    return sorted(e for unit in chosen for e in unit)


def _weight_matmul(selective_base, entry):
    e = selective_base.tape[entry]
    return e["family"] == "matmul" and any(selective_base.tensors[uid]["kind"] == "param" for uid in e["inputs"])


def manual_entries(selective_base, tensor_ids):
    """The entries producing the tensors a user clicked; PolicyError naming any that cannot be recomputed."""
    entries, problems = [], Problems()
    for uid in tensor_ids:
        tensor = selective_base.tensors[uid]
        producer = tensor["produced_by"]
        if producer is None:
            reason = "it is a leaf: there is no op to re-run"
        elif selective_base.tape[producer]["output"] != uid:
            reason = f"it is a mask or statistic {selective_base.tape[producer]['op']} keeps beside its output"
        else:
            reason = refusal(selective_base.tape[producer], selective_base.tensors,
                             selective_base.use, require_saved=False)
        if reason:
            problems.add("checkpoint.recompute", f"tensor {uid} ({tensor['name']}) cannot be recomputed: {reason}")
        else:
            entries.append(producer)
    if problems:
        raise PolicyError(problems)
    longest = _longest_chain(selective_base, set(entries))
    if longest > cap("recompute_chain"):
        raise PolicyError([{"path": "checkpoint.recompute",
                            "message": f"picks {longest} ops in a row, each re-derived from the one before; "
                                       f"at most {cap('recompute_chain')} in a row: keep some of them stored"}])
    return sorted(set(entries))


def _longest_chain(selective_base, entries):
    """The most picked entries in a row where each reads the previous one's output (a nested recipe)."""
    produced = {selective_base.tape[e]["output"]: e for e in entries}
    depth = {}
    for e in sorted(entries):              # producers come first in forward
        feeding = [depth[produced[uid]] for uid in selective_base.tape[e]["inputs"] if uid in produced]
        depth[e] = 1 + max(feeding, default=0)
    return max(depth.values(), default=0)


def validate(checkpoint, n_blocks, tensor_ids):
    """The normalized request {policy, params, preserve_rng_state}; raises PolicyError with {path, message}."""
    if checkpoint is None:
        checkpoint = {"policy": "none"}
    if not isinstance(checkpoint, dict):
        problems = Problems()
        fields.report(problems, "checkpoint", 'an object like {"policy": "sqrt"}', checkpoint, of_type=False)
        raise PolicyError(problems)
    policy = checkpoint.get("policy", "none")
    problems = Problems()
    fields.choice(policy, "checkpoint.policy", problems, POLICIES)
    preserve = fields.boolean(checkpoint.get("preserve_rng_state", True), "checkpoint.preserve_rng_state", problems,
                              True)
    params = {}
    if policy == "every_k":
        k = checkpoint.get("k")
        fields.integer(k, "checkpoint.k", problems, 1, n_blocks)          # L, the blocks checkpointed
        params["k"] = k
    if policy == "optimal":
        budget = checkpoint.get("budget_bytes")
        if not fields.is_integer(budget) or budget <= 0:
            fields.report(problems, "checkpoint.budget_bytes", "a positive whole number of bytes", budget,
                          of_type=fields.is_integer(budget))
        params["budget_bytes"] = budget
    if policy == "manual":
        ids = checkpoint.get("recompute")
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            problems.add("checkpoint.recompute", "must be a list of tensor ids")
        else:
            unknown = [t for t in ids if t not in tensor_ids]
            if unknown:
                problems.add("checkpoint.recompute", f"names tensors that are not activations of this model: {unknown[:5]}")
        params["recompute"] = ids
    if problems:
        raise PolicyError(problems)
    return {"policy": policy, "params": params, "preserve_rng_state": preserve}
