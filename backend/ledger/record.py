""""Record this configuration": the command that records the ledger's per-GPU configuration on the tape, fake (no
GPUs needed), when one of the repository's example models is that model; otherwise the same command for the
user's own model file, with what to change named.

The examples it knows: examples/torch/gpt*.py (4 × 256, 4 heads, vocab 128, 64 tokens, dropout, a global batch of
8: DDP for zero 0, ZeroRedundancyOptimizer for 1, FSDP2 without and with resharding for 2 and 3, tensor + sequence
parallel on gpt_tp.py, untied in 2 pipeline stages on gpt_pipeline.py: one command a stage, as fake mode records one
rank at a time) and examples/torch/llama7b_fsdp.py (the Llama family under FSDP2 with a bf16 policy, its
sizes set through TAPESCOPE_LLAMA_* variables, micro-batch 1). Nothing here runs anything.
"""
IMPORTER = ".venv/bin/python -m backend.importers.torch"
GPT_SHAPE = dict(layers=4, hidden=256, heads=4, mlp_ratio=4.0, vocab=128, seq=64, mlp="gelu", norm="layernorm",
                 bias=True, tied_embeddings=True, position_embeddings=True, rotary=False, dropout=True,
                 attention="naive", masks="dtype", embedding_dropout=True, dtype="fp32", mixed_precision=False,
                 optimizer="adam")
GPT_BATCH = 8
GPT_BY_ZERO = {0: "gpt_ddp.py", 1: "gpt_zero1.py", 2: "gpt_fsdp_keep.py", 3: "gpt_fsdp.py"}
LLAMA_FAMILY = dict(mlp="swiglu", norm="rmsnorm", bias=False, tied_embeddings=False, position_embeddings=False,
                    rotary=True, dropout=False, attention="flash", dtype="bf16", mixed_precision=True,
                    optimizer="adam", batch=1, zero=3, tp=1, pp=1)


def _matches(config, fields):
    return all(getattr(config, name) == value for name, value in fields.items())


def _gpt_example(config):
    if not _matches(config, GPT_SHAPE) or config.pp > 1 or config.recompute != "none":
        return None
    if config.tp > 1:
        if config.dp == 1 and config.batch == GPT_BATCH and not config.loss_parallel and config.tp in (2, 4):
            return f"examples/torch/gpt_tp.py{'' if config.sp else ' (with TP_SEQUENCE_PARALLEL = False)'}"
        return None
    if config.dp * config.batch != GPT_BATCH:
        return None
    return "examples/torch/gpt.py" if config.dp == 1 else f"examples/torch/{GPT_BY_ZERO[config.zero]}"


def _pipeline_example(config):
    """examples/torch/gpt_pipeline.py: the GPT untied in 2 stages, Schedule1F1B, 4 micro-batches of 2 sequences."""
    shape = {**GPT_SHAPE, "tied_embeddings": False}
    if (not _matches(config, shape) or config.recompute != "none" or (config.dp, config.tp, config.pp) != (1, 1, 2)
            or config.micro_batches != 4 or config.batch * config.micro_batches != GPT_BATCH):
        return None
    return " && ".join(f"{IMPORTER} examples/torch/gpt_pipeline.py --fake --world-size 2 --rank {rank} --warmup 1 "
                       f"--out stage{rank}.json" for rank in (0, 1))


def _llama_example(config):
    if not _matches(config, LLAMA_FAMILY) or config.kv_heads not in (0, config.heads) or config.recompute != "none":
        return None
    sizes = {"LAYERS": config.layers, "WIDTH": config.hidden, "HEADS": config.heads, "HIDDEN": config.mlp_hidden,
             "VOCAB": config.vocab, "SEQ": config.seq}
    defaults = {"LAYERS": 32, "WIDTH": 4096, "HEADS": 32, "HIDDEN": 11008, "VOCAB": 32000, "SEQ": 4096}
    return " ".join(f"TAPESCOPE_LLAMA_{name}={value}" for name, value in sizes.items() if value != defaults[name])


def record_command(config):
    """{"command", "example"} where example says whether the command records an example model as it is."""
    ranks = config.dp * config.tp * config.pp
    fake = f"--fake --world-size {ranks}" if ranks > 1 else "--fake"
    gpt = _gpt_example(config)
    if gpt is not None:
        path, _, note = gpt.partition(" ")
        return {"command": f"{IMPORTER} {path} {fake} --warmup 1 --out run.json" + (f"   {note}" if note else ""),
                "example": True}
    pipeline = _pipeline_example(config)
    if pipeline is not None:
        return {"command": pipeline, "example": True}       # a fake run records one stage a command
    llama = _llama_example(config) if config.dp > 1 else None
    if llama is not None:
        prefix = f"{llama} " if llama else ""
        return {"command": f"{prefix}{IMPORTER} examples/torch/llama7b_fsdp.py {fake} --out run.json", "example": True}
    return {"command": f"{IMPORTER} your_model.py {fake} --warmup 1 --out run.json", "example": False}
