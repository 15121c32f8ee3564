"""Recording without the hardware: the user's build() and step run under torch's FakeTensorMode, and with a world
size, over torch's fake process group (torch.testing._internal.distributed.fake_pg): shapes, dtypes, bytes and
lifetimes of the real model code at real size, no values and no memory.

What this needs of the recorder: a fake tensor's storage has no data pointer (0), so storages are known by the
storage itself while it lives (torch_storages.storage_address), a resize changes a fake storage's size and not its
address (torch_waits), and no statistics are read (torch_storages.is_fake). What torch needs: a DeviceMesh is made
outside fake mode (its rank map is read with tolist()), so every DeviceMesh, the user's or fully_shard's own default
mesh, is made with fake mode lifted while the block is on; DDP runs with two
changes a fake group needs (_ddp_on_fake_ranks); a pipeline schedule's stages decide their metadata mode alone
(_pipeline_votes_alone). The fake process group is one rank's view: every collective and every send or receive
returns at once with its output's shape (a receive leaves its buffer as it was), so the document is one rank's,
rank 0's unless another is asked for (`--rank R`: a pipeline's stages differ, one command each).
"""
import contextlib

import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily

from backend.importers.mistakes import StepError
from backend.models.caps import cap

_step_mode = []         # the FakeTensorMode a faking() block runs the step under, while it does


def step_fake_mode():
    """The FakeTensorMode the whole step runs under (faking()), else None: a fake tensor of another mode (DTensor's
    sharding propagation) is no tensor of the step."""
    return _step_mode[-1] if _step_mode else None


@contextlib.contextmanager
def faking(world_size=1, rank=0):
    """Within: new tensors are fake; with world_size > 1, the process group is torch's fake one of that size, this
    process its `rank` (the fake group takes any: FakeProcessGroup._create_internal(group_rank, group_size)). The
    group is destroyed when the block ends."""
    grouped = world_size > 1
    if grouped:
        from torch.testing._internal.distributed.fake_pg import FakeStore
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
    _forget_sharding_decisions()
    try:
        with _meshes_made_for_real(), _ddp_on_fake_ranks(), _pipeline_votes_alone(), FakeTensorMode() as mode:
            _step_mode.append(mode)
            try:
                yield
            finally:
                _step_mode.pop()
    finally:
        _forget_sharding_decisions()
        if grouped:
            dist.destroy_process_group()


def _forget_sharding_decisions():
    """DTensor caches its sharding decisions by op schema and its redistribution plans by placements, and a
    placement can carry a tensor (the MaskPartial of a vocabulary-split embedding keeps its mask): a plan made on
    the fake step and reused by a later real step in the same process (or one forked from it) applied the fake
    step's mask, and the embedding's gradient came out wrong (seen in tests/importers/test_gpt_tp.py). Neither
    world keeps the other's."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        return
    from torch.distributed.tensor import _redistribute
    propagator = DTensor._op_dispatcher.sharding_propagator
    propagator.propagate_op_sharding.cache_clear()
    propagator._propagate_tensor_meta_cached.cache_clear()
    _redistribute._gen_transform_infos.cache_clear()      # its plans keep the placements they were made with


@contextlib.contextmanager
def _meshes_made_for_real():
    """Every DeviceMesh made while the block is on (by init_device_mesh however the user imported it, by
    fully_shard for its default mesh, or directly) is made with fake mode lifted, its rank map a real tensor: it
    reads the ranks out of it. A rank map made under fake mode has no values to read; it is init_device_mesh's
    identity map (arange), which is what it is remade as."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.distributed.device_mesh import DeviceMesh
    original = DeviceMesh.__init__

    def real(tensor):
        if not isinstance(tensor, FakeTensor):
            return tensor
        return torch.arange(tensor.numel(), dtype=torch.int).view(tuple(tensor.shape))

    def __init__(self, device_type, mesh=None, *args, **kwargs):
        with unset_fake_temporarily():
            if "_rank_map" in kwargs:
                kwargs["_rank_map"] = real(kwargs["_rank_map"])
            original(self, device_type, real(mesh), *args, **kwargs)

    DeviceMesh.__init__ = __init__
    try:
        yield
    finally:
        DeviceMesh.__init__ = original


@contextlib.contextmanager
def _ddp_on_fake_ranks():
    """DistributedDataParallel as on real ranks, but for two things a fake group cannot give: its check that every
    rank's parameters have one shape reads the shapes out of a tensor's data (a fake one has none; every fake rank
    is this one), its default bucket hook reads the all-reduced bucket from the Work's future, which a fake Work
    leaves empty, and after the first step its reducer rebuilds the buckets in the order gradients became ready,
    agreeing on them across ranks by a broadcast whose result it reads. So at a model's first forward: a model
    whose build() registered no hook gets torch's default one (divide the bucket by the world size, all-reduce it)
    with the bucket itself as the future's value, and the buckets are never rebuilt; instead DDP assigns them at
    construction with the size limits its rebuild uses (the first bucket's cap, then bucket_cap_mb), where it
    would put every parameter in one bucket until the rebuild: the same buckets, in reverse parameter order, which
    is what the rebuild's order of ready gradients approximates (a bucket's members may differ, not its bytes)."""
    import torch
    import torch.nn.parallel.distributed as ddp
    verify, pre_forward = ddp._verify_param_shape_across_processes, ddp.DistributedDataParallel._pre_forward
    limits = ddp._BucketCapacityConfig.compute_bucket_size_limits

    def rebuilt_limits(self, static_graph, find_unused_parameters):
        if self.has_custom_per_bucket_caps:
            return limits(self, static_graph, find_unused_parameters)
        caps = sorted({self.first_bucket_bytes_cap, self.bucket_bytes_cap})
        return (caps, [])

    def fake_allreduce_hook(process_group, bucket):
        buffer = bucket.buffer()
        group = process_group if process_group is not None else dist.group.WORLD
        buffer.div_(dist.get_world_size(group))
        dist.all_reduce(buffer, group=group, async_op=True)
        done = torch.futures.Future()
        done.set_result(buffer)
        return done

    def _pre_forward(self, *inputs, **kwargs):
        if not isinstance(self.reducer, _UnrebuiltReducer):
            if not self._comm_hooks:
                self.register_comm_hook(None, fake_allreduce_hook)
            self.reducer = _UnrebuiltReducer(self.reducer)
        return pre_forward(self, *inputs, **kwargs)

    ddp._verify_param_shape_across_processes = lambda process_group, tensors, logger=None: None
    ddp.DistributedDataParallel._pre_forward = _pre_forward
    ddp._BucketCapacityConfig.compute_bucket_size_limits = rebuilt_limits
    try:
        yield
    finally:
        ddp._verify_param_shape_across_processes = verify
        ddp.DistributedDataParallel._pre_forward = pre_forward
        ddp._BucketCapacityConfig.compute_bucket_size_limits = limits


class _UnrebuiltReducer:
    """A DDP reducer that never rebuilds its buckets (see _ddp_on_fake_ranks); everything else is the reducer's."""

    def __init__(self, reducer):
        self._reducer = reducer

    def __getattr__(self, name):
        return getattr(self._reducer, name)

    def _rebuild_buckets(self):
        return False


@contextlib.contextmanager
def _pipeline_votes_alone():
    """A pipeline schedule's first step starts with a vote (torch/distributed/pipelining/schedules.py,
    _PipelineSchedule._warmup_p2p, ~line 341): each PipelineStage votes STATIC when its constructor was given
    input_args and output_args (_utils.InferenceMode.needs_dynamic), the product travels stage to stage by
    dist.send/dist.recv of a one-element tensor (stage.py, PipelineStage._warmup_forward_vote and
    _warmup_backward_result, ~lines 1750-1819), and every stage reads the result with `result.item()`
    (schedules.py ~line 372). On a fake group the receive leaves the tensor as it was, and a fake tensor has no
    item() (fake_impls.local_scalar_dense raises DataDependentOutputException). DYNAMIC would be no better: it
    infers a stage's shapes from its neighbour's by recv_object_list (stage.py, PipelineStage._recv_meta), which a
    fake group cannot answer. So under fake mode each PipelineStage takes its own vote as the result, and a stage
    that would need its neighbour's shapes is a sentence. Other stage types (pipeline()'s, build_stage) keep
    torch's warm-up (empty sends and receives)."""
    try:
        from torch.distributed.pipelining._utils import InferenceMode
        from torch.distributed.pipelining.schedules import _PipelineSchedule
        from torch.distributed.pipelining.stage import PipelineStage
    except ImportError:                 # a torch without pipelining, or one before the vote: nothing to change
        yield
        return
    original = _PipelineSchedule._warmup_p2p

    def _warmup_p2p(self, stages, has_backward, p2p_done):
        if not all(isinstance(stage, PipelineStage) for stage in stages):
            return original(self, stages, has_backward, p2p_done)
        for stage in stages:
            if InferenceMode.needs_dynamic(stage._user_meta, has_backward):
                raise StepError(
                    f"under --fake, PipelineStage {stage.stage_index} needs its shapes given: pass input_args and "
                    "output_args (a micro-batch's example tensors; an activation that is sent on requires grad), "
                    "since torch otherwise infers them from the neighbouring stage by recv_object_list, which a "
                    "fake process group cannot answer (examples/torch/gpt_pipeline.py shows how)")
            stage._inference_mode = InferenceMode.STATIC

    _PipelineSchedule._warmup_p2p = _warmup_p2p
    try:
        yield
    finally:
        _PipelineSchedule._warmup_p2p = original


def fake_world_problem(world_size, rank=0):
    """The sentence for a --world-size or --rank outside what is accepted, else None."""
    if not 1 <= world_size <= cap("fake_world"):
        return f"--world-size {world_size}: give a number of fake ranks from 1 to {cap('fake_world')}"
    if not 0 <= rank < world_size:
        return f"--rank {rank}: give the rank to record, from 0 to {world_size - 1} (--world-size {world_size})"
    return None

