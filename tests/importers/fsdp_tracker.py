"""torch's own FSDPMemTracker (torch.distributed._tools.fsdp2_mem_tracker) on a model file's fake step: the oracle
the fake-mode recording is checked against (tests/importers/test_torch_fake.py, bench/torch_fake.py)."""
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

from backend.importers.torch_fake import faking
from backend.importers.torch_step import load_build, run_step, step_of, warm_up


def tracker_peak(model_file, world_size, warmup=1):
    """The tracker's peak total (bytes, its one device) over one step after `warmup` plain ones, on fake ranks."""
    build = load_build(model_file)
    with faking(world_size):
        model, batch, loss_fn, optimizer = step_of(build)
        warm_up(model, batch, loss_fn, optimizer, warmup)
        tracker = FSDPMemTracker(model, optimizer)
        tracker.track_inputs(batch)
        with tracker:
            run_step(model, batch, loss_fn, optimizer)
        (peak,) = tracker.get_tracker_snapshot("peak").values()
    return peak["Total"]
