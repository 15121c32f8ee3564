"""The "fits on" table: for a model and a cluster (gpus × device_gib), every way to spread one step over the GPUs
(dp · tp · pp = gpus; tp dividing the heads, pp the layers; ZeRO 0–3 where dp > 1; sequence parallel with every
tp > 1; with and without full recomputation), each with its per-GPU peak (parallel.py) and Megatron's figure, the
ones that fit first: the fewest model-parallel ranks, the lowest ZeRO stage, no recomputation, then the lowest
peak. The micro-batch, micro-batch count and virtual stages are the config's.
"""
import dataclasses

from backend.ledger.config import COMBINATIONS
from backend.ledger.megatron import megatron
from backend.ledger.parallel import per_gpu, stages

MAX_FITS_ROWS = 200


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def _valid(config):
    return not any(check(config) for _, _, check in COMBINATIONS)


def candidates(config):
    for tp in _divisors(config.gpus):
        for pp in _divisors(config.gpus // tp):
            dp = config.gpus // (tp * pp)
            for zero in (range(4) if dp > 1 else (0,)):
                for recompute in ("none", "full"):
                    option = dataclasses.replace(config, dp=dp, tp=tp, pp=pp, zero=zero, sp=tp > 1,
                                                 recompute=recompute)
                    if _valid(option):
                        yield option


def fits_table(config):
    rows, staged = [], {}
    for option in candidates(config):
        key = (option.tp, option.pp, option.recompute)
        if key not in staged:
            staged[key] = stages(option)
        gpu = per_gpu(option, staged[key])
        rows.append({"dp": option.dp, "zero": option.zero, "tp": option.tp, "sp": option.sp, "pp": option.pp,
                     "recompute": option.recompute, "peak_bytes": gpu["peak_bytes"], "fits": gpu["fits"],
                     "megatron_bytes": megatron(option)["total_bytes"]})
    rows.sort(key=lambda r: (not r["fits"], r["tp"] * r["pp"], r["zero"], r["recompute"] != "none", r["peak_bytes"]))
    fitting = sum(row["fits"] for row in rows)
    return {"gpus": config.gpus, "device_bytes": config.device_bytes, "tried": len(rows), "fitting": fitting,
            "rows": rows[:MAX_FITS_ROWS]}
