"""One GPU's memory in a sharded, tensor- and pipeline-parallel step: the rows of `per_gpu` and its peak.

A GPU holds one pipeline stage's share (pp stages of layers/pp blocks each; the embeddings on the first stage, the
final norm and the head on the last, and with tied embeddings a copy of the embedding there too, as Megatron keeps
it), split over tp tensor-parallel ranks as params.py and rows.py say, its state sharded over dp data-parallel
ranks by the ZeRO stage, as torch does it:
- zero 0: DistributedDataParallel: every rank keeps whole parameters, gradients and optimizer state, and its
  buckets are a flat copy of every gradient (gradient_as_bucket_view=False, DDP's default);
- zero 1: ZeroRedundancyOptimizer on top: each rank keeps the optimizer state (and fp32 master copy) of whole
  tensors, dealt largest first to the least loaded rank; the row is the most loaded rank's;
- zero 2: FSDP2 with reshard_after_forward=False: parameters, gradients and state sharded by 1/dp, every block's
  parameters all-gathered from its forward until its backward, two blocks' gradients whole around their
  reduce-scatters (as a recording's peak holds them);
- zero 3: FSDP2 per block (reshard_after_forward=True): the same shards, but only the root's parameters (embeddings,
  final norm, head: FSDP2 keeps the root gathered into backward) and two blocks' (the one running and the one
  prefetched) gathered at once, and one block's gradient before its reduce-scatter.
Activations are the stage's saved rows times the micro-batches in flight under 1F1B (stage s holds min(pp − s, m)
before its first backward; the interleaved schedule multiplies that by Megatron's 1 + (pp − 1)/(pp·vpp),
Narayanan et al. 2021), plus two boundary tensors for the pipeline's sends and receives. With `recompute` full, a
block keeps only its input and re-makes its saved tensors in its backward, one block at a time.

The peak walks one backward pass layer by layer: activations freed from the top while gradients appear, with the
state that stays (weights, optimizer state, DDP's buckets, FSDP2's gathered parameters) under it; with more
micro-batches than in flight, the steady state (a full stage of micro-batches on top of every gradient) can be
higher. The transient gradients of activations inside one layer's backward and the optimizer step's temporaries
come on top, as does the allocator's rounding (the recorder's --allocator cuda shows it).
"""
import heapq
import math
from dataclasses import dataclass

from backend.ledger.config import DTYPE_BYTES, ITEM_BYTES
from backend.ledger.params import FIRST, LAST, LAYER, ParamTensor, block_tensors, param_tensors
from backend.ledger.resident import FP32_BYTES, optimizer_state_bytes
from backend.ledger.rows import head_rows, layer_rows, network_rows

ROW_NAMES = ("parameters", "gradients", "optimizer_state", "activations", "communication_buffers")
EMBEDDING_ROWS = ("embed.indices", "embed.positions", "embed.dropout_mask")
LAST_STAGE_ROWS = ("ln_f.", "loss.")


@dataclass(frozen=True)
class Stage:
    """What one GPU of pipeline stage `index` holds, before ZeRO: its tensors' elements and its saved rows' bytes."""
    index: int
    layers: int
    layer_numel: int          # one block's parameter elements on this tensor-parallel rank
    other_numel: int          # the embeddings / final norm / head elements this stage holds
    other_tensors: tuple      # ParamTensors (per-rank sizes) of those
    layer_tensors: tuple      # ParamTensors of one block (per-rank sizes)
    layer_act: int            # one block's saved bytes for one micro-batch (its input alone under full recompute)
    recompute_act: int        # one block's saved bytes re-made in its backward under full recompute, else 0
    edge_act: int             # the stage's once-per-network saved bytes for one micro-batch
    head_act: int             # the head's (logits, probabilities) on the last stage, else 0
    in_flight: float          # micro-batches whose activations the stage holds before its first backward

    @property
    def numel(self):
        return self.layers * self.layer_numel + self.other_numel


def _ceil_div(a, b):
    return -(-a // b)


def stages(config):
    """Every pipeline stage's Stage (one GPU of it: tensor-parallel rank 0, before ZeRO sharding)."""
    tp, sp, pp = config.tp, config.sp, config.pp
    per_stage = config.layers // pp
    layer_tensors = tuple(ParamTensor(name, (_ceil_div(math.prod(shape), tp) if split else math.prod(shape),))
                          for name, shape, split in block_tensors(config))
    layer_act = sum(row.split_bytes(tp, sp) for row in layer_rows(config))
    recompute_act = 0
    if config.recompute == "full":
        boundary = config.batch * config.seq * config.hidden * ITEM_BYTES[config.dtype_name]
        layer_act, recompute_act = (_ceil_div(boundary, tp) if sp else boundary), layer_act
    network = network_rows(config)
    tensors = param_tensors(config)
    heads = sum(row.split_bytes(tp, sp) if config.loss_parallel else row.bytes for row in head_rows(config))
    everywhere = sum(row.split_bytes(tp, sp) for row in network
                     if not row.name.startswith(EMBEDDING_ROWS + LAST_STAGE_ROWS))
    embedding = sum(row.split_bytes(tp, sp) for row in network if row.name.startswith(EMBEDDING_ROWS))
    last = sum(row.split_bytes(tp, sp) for row in network if row.name.startswith(LAST_STAGE_ROWS))
    penalty = 1 + (pp - 1) / (pp * config.vpp) if config.vpp > 1 else 1
    result = []
    for index in range(pp):
        places = {LAYER} | ({FIRST} if index == 0 else set()) | ({LAST} if index == pp - 1 else set())
        others = [t for t in tensors if t.place in places - {LAYER}]
        if index == pp - 1 and index > 0 and config.tied_embeddings:
            others += [t for t in tensors if t.name == "wte"]     # the head's copy of the embedding
        other_tensors = tuple(ParamTensor(t.name, (t.split_numel(tp),)) for t in others)
        edge = everywhere + (embedding if index == 0 else 0) + (last if index == pp - 1 else 0)
        result.append(Stage(
            index=index, layers=per_stage, layer_numel=sum(t.numel for t in layer_tensors),
            other_numel=sum(t.numel for t in other_tensors), other_tensors=other_tensors,
            layer_tensors=layer_tensors, layer_act=layer_act, recompute_act=recompute_act, edge_act=edge,
            head_act=heads if index == pp - 1 else 0,
            in_flight=min(pp - index, config.micro_batches) * penalty))
    return result


def _zero1_share(config, stage):
    """ZeroRedundancyOptimizer's partition: whole tensors, largest first, each to the least loaded rank; the most
    loaded rank's tensors (as ParamTensors)."""
    tensors = sorted([t for t in stage.layer_tensors for _ in range(stage.layers)] + list(stage.other_tensors),
                     key=lambda t: -t.numel)
    ranks = [(0, rank, []) for rank in range(min(config.dp, len(tensors)) or 1)]
    for tensor in tensors:
        load, rank, held = heapq.heappop(ranks)
        held.append(tensor)
        heapq.heappush(ranks, (load + tensor.numel, rank, held))
    return max(ranks)[2]


def _state_tensors(config, stage):
    """The tensors whose optimizer state this GPU keeps: all of the stage's, the rank's share under ZeRO."""
    tensors = [ParamTensor(t.name, t.shape, stage.layers) for t in stage.layer_tensors] + list(stage.other_tensors)
    if config.dp == 1 or config.zero == 0:
        return tensors
    if config.zero == 1:
        return _zero1_share(config, stage)
    return [ParamTensor(t.name, (_ceil_div(t.numel, config.dp),), t.copies) for t in tensors]


def _sharded(numel, config, stage_from):
    return _ceil_div(numel, config.dp) if config.zero >= stage_from and config.dp > 1 else numel


def gpu_rows(config, stage):
    """{row name: {"bytes", "why"}} for one GPU of `stage`, and the pieces the peak needs."""
    weight_bytes, fp32 = DTYPE_BYTES[config.dtype], FP32_BYTES
    numel = stage.numel
    sharded = config.zero >= 2 and config.dp > 1
    weights = grads = _sharded(numel, config, 2) * weight_bytes        # FSDP2 shards both alike
    state = _state_tensors(config, stage)
    master = sum(t.numel * t.copies for t in state) * fp32 if config.mixed_precision else 0
    optimizer = optimizer_state_bytes(config, state) + master
    block_weights = stage.layer_numel * weight_bytes
    edge_weights = stage.other_numel * weight_bytes
    if config.zero == 3:
        comm, comm_why = (edge_weights + 3 * block_weights,
                          "FSDP2's gathered parameters: the root's (embeddings, norm, head), the block running and "
                          "the block prefetched, and one block's whole gradient before its reduce-scatter")
    elif config.zero == 2:
        comm, comm_why = (numel * weight_bytes + 2 * block_weights,
                          "FSDP2 without resharding after forward: every block's gathered parameters from its forward "
                          "to its backward, and two blocks' whole gradients around their reduce-scatters")
    elif config.dp > 1:
        comm, comm_why = (numel * weight_bytes,
                          "DDP's buckets: a flat copy of every gradient, all-reduced bucket by bucket")
    else:
        comm, comm_why = 0, "none: one data-parallel rank"
    boundary = config.batch * config.seq * config.hidden * ITEM_BYTES[config.dtype_name]
    if config.pp > 1:
        sends = 2 * (_ceil_div(boundary, config.tp) if config.sp else boundary)
        comm += sends
        comm_why += "; the pipeline's send and receive buffers (one boundary tensor each way)"
    activations = math.ceil(stage.in_flight * (stage.layers * stage.layer_act + stage.edge_act)) + stage.head_act
    rows = {
        "parameters": (weights, f"{numel:,} elements of stage {stage.index} on one tensor-parallel rank"
                                + (", a 1/dp shard" if sharded else "")),
        "gradients": (grads, "one per parameter" + (", a 1/dp shard" if sharded else "")),
        "optimizer_state": (optimizer, _optimizer_why(config)),
        "activations": (activations, f"{stage.layers} blocks' saved tensors"
                        + (" (each block's input; one block's recomputed in backward)" if stage.recompute_act else "")
                        + f" × {stage.in_flight:g} micro-batch{'' if stage.in_flight == 1 else 'es'} in flight"
                        + (" and the head's logits and probabilities" if stage.head_act else "")),
        "communication_buffers": (comm, comm_why),
    }
    return {name: {"bytes": int(nbytes), "why": why} for name, (nbytes, why) in rows.items()}


def _optimizer_why(config):
    kept = {"sgd": "none (plain SGD)", "adam": "Adam's two moments", "adam8bit": "8-bit Adam's two moments"}
    why = kept[config.optimizer] + (" and the fp32 master weights" if config.mixed_precision else "")
    if config.dp > 1 and config.zero == 1:
        return why + ", for the whole tensors this rank owns (ZeroRedundancyOptimizer; the most loaded rank)"
    if config.dp > 1 and config.zero >= 2:
        return why + ", a 1/dp shard"
    return why


def peak_bytes(config, stage, rows):
    """The layer-by-layer walk of one backward pass (and the 1F1B steady state when there is one)."""
    weight_bytes = DTYPE_BYTES[config.dtype]
    steady = rows["parameters"]["bytes"] + rows["optimizer_state"]["bytes"]
    comm = rows["communication_buffers"]["bytes"]
    block_weights, edge_weights = stage.layer_numel * weight_bytes, stage.other_numel * weight_bytes

    def sharding(gathered_blocks, gradient_buffers=0):
        """What sharding holds beside the state: DDP's buckets always, FSDP2's buffers (zero 3), or the blocks still
        gathered from forward and the whole gradients of the blocks around their reduce-scatters (zero 2: the
        first block's alone, then two)."""
        if config.zero != 2:
            return comm
        return edge_weights + (gathered_blocks + gradient_buffers) * block_weights

    block_grad = _sharded(stage.layer_numel, config, 2) * weight_bytes
    edge_grad = _sharded(stage.other_numel, config, 2) * weight_bytes
    activations = rows["activations"]["bytes"]
    one_micro = stage.layers * stage.layer_act + stage.edge_act
    earlier = activations - stage.head_act - one_micro      # the other micro-batches in flight
    layers = stage.layers
    points = [activations + sharding(layers),
              earlier + one_micro + edge_grad + sharding(layers)]                   # after the head's backward
    for above in range(layers):                             # during block (layers - 1 - above)'s backward
        points.append(earlier + stage.edge_act + (layers - above) * stage.layer_act + stage.recompute_act
                      + edge_grad + (above + 1) * block_grad + sharding(layers - above, min(above + 1, 2)))
    gradients = rows["gradients"]["bytes"]
    points.append(earlier + gradients + (comm if config.zero < 2 else 0))
    if config.micro_batches > stage.in_flight:              # 1F1B's steady state: a full pipeline on every gradient
        points.append(activations + gradients + sharding(layers))
    return steady + max(points)


def per_gpu(config, staged=None):
    """The most loaded GPU's rows and peak, and the peaks of the stages that can be it: the first, the second and
    the last (every middle stage holds what the second holds with fewer micro-batches in flight, so less); `staged`
    is stages(config) when the caller has it already (the ZeRO stage changes nothing in it: fits.py asks four times
    for each)."""
    staged = staged if staged is not None else stages(config)
    candidates = [staged[i] for i in sorted({0, min(1, len(staged) - 1), len(staged) - 1})]
    by_stage = []
    for stage in candidates:
        rows = gpu_rows(config, stage)
        by_stage.append((peak_bytes(config, stage, rows), stage, rows))
    peak, stage, rows = max(by_stage, key=lambda item: item[0])
    return {
        "stage": stage.index,
        "rows": [{"name": name, **rows[name]} for name in ROW_NAMES],
        "total_bytes": sum(row["bytes"] for row in rows.values()),
        "peak_bytes": peak,
        "stage_peaks": {str(item[1].index): item[0] for item in by_stage},
        "fits": peak <= config.device_bytes,
        "gpus": config.dp * config.tp * config.pp,
    }
