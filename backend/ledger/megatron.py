"""Megatron-LM's theoretical memory (megatron/training/theoretical_memory_usage.py), beside the ledger's per-GPU rows.

Its formula, restated: the most loaded model shard holds (the transformer block / pp + one embedding) / tp
parameters (a second embedding when the head is untied and pp = 1), at 18 B each, or 6 + 12/dp with the
distributed optimizer (fp16 weights and gradients, an fp32 master copy and Adam's two fp32 moments, Megatron's
mixed-precision stack). Activations of the first stage (the most loaded under 1F1B): per layer s·b·h·(10 + 24/tp),
times the layers, plus the embedding's input and dropout for pp micro-batches in flight, times the interleaved
penalty 1 + (pp − 1)/(pp·vpp) (or m/pp when fewer micro-batches than stages), plus the head's logits and final norm
output at 2 B when pp = 1; the whole times 1.05, its "buffer for optimizer and miscellaneous temporaries (5%
overhead)". That is its path without sequence parallelism with selective recomputation; with both it uses
Korthikanti's s·b·h·(18 + 4·ffn/h)/tp per layer and no 5%. It knows nothing of the optimizer the config names, of
fp32 training or of ZeRO stages besides its distributed optimizer (zero ≥ 1 here), and it assumes a 16-bit model.
"""
MEGATRON_OVERHEAD = 1.05


def _layer_params(config):
    h, kv_ratio = config.hidden, config.kv_groups / config.heads
    gated = 3 / 2 if config.mlp == "swiglu" else 1
    norm = 1 if config.norm == "rmsnorm" else 2
    return 2 * h * (config.mlp_hidden * gated + norm) + 2 * h * h * (1 + kv_ratio)


def weight_and_optimizer_bytes(config):
    block = _layer_params(config) * config.layers + (1 if config.norm == "rmsnorm" else 2) * config.hidden
    embedding = config.hidden * config.vocab
    shard = (block / config.pp + embedding) / config.tp
    if not config.tied_embeddings and config.pp == 1:
        shard += embedding / config.tp
    per_param = 6 + 12 / config.dp if config.zero >= 1 else 18
    return shard * per_param


def activation_bytes(config):
    s, b, h, tp, pp = config.seq, config.batch, config.hidden, config.tp, config.pp
    with_sp = config.sp
    if with_sp:
        total = s * b * h * (18 + 4 * config.mlp_hidden / h) * config.layers
    else:
        total = s * b * h * (10 + 24 / tp) * config.layers
    total += 8 * s * b * pp + s * b * h * pp
    if config.vpp > 1:
        total *= 1 + (pp - 1) / (pp * config.vpp)
    elif pp > 1:
        total *= min(1, config.micro_batches / pp)
    if pp == 1:
        if with_sp:
            total += s * b * h * 4 * (1 + config.vocab / h)
        else:
            total += (s * b * config.vocab / tp + s * b * h) * 2
    if with_sp:
        return total / tp
    return total * MEGATRON_OVERHEAD


def megatron(config):
    weights = weight_and_optimizer_bytes(config)
    activations = activation_bytes(config)
    return {"weight_and_optimizer_bytes": round(weights), "activation_bytes": round(activations),
            "total_bytes": round(weights + activations), "overhead_factor": 1.0 if config.sp else MEGATRON_OVERHEAD}
