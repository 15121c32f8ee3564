"""DistributedDataParallel as the importer reads it: the DDP module in a model, and the bytes of its reducer's
buckets (flat buffers made at construction or at its rebuild, alive from then on: memory before any step)."""


def find_ddp(model):
    """The first DistributedDataParallel module in `model`, else None."""
    from torch.nn.parallel import DistributedDataParallel
    if model is None:
        return None
    return next((m for m in model.modules() if isinstance(m, DistributedDataParallel)), None)


def bucket_bytes(model):
    """The bytes of the DDP reducer's buckets in `model` (0 without DDP), as the reducer reports them."""
    ddp = find_ddp(model)
    if ddp is None:
        return 0
    buckets = ddp.reducer._get_zeros_like_grad_buckets()
    return int(sum(bucket.buffer().nbytes for bucket in buckets))
