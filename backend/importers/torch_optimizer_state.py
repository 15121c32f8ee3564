"""An optimizer's state tensors, wherever the optimizer keeps them: (parameter, key, tensor) per entry.

A plain torch.optim optimizer keeps them in `optimizer.state`, by parameter. ZeroRedundancyOptimizer (ZeRO-1) keeps
the state of the parameters this rank owns in its local optimizer (`optimizer.optim`), and none of its own."""
import torch


def state_tensors(optimizer):
    """Every (parameter, key, tensor) of the optimizer's state, the local optimizer's of a sharded one included."""
    if optimizer is None:
        return
    local = getattr(optimizer, "optim", None)
    for holder in (optimizer, *([local] if isinstance(local, torch.optim.Optimizer) else [])):
        for group in holder.param_groups:
            for parameter in group["params"]:
                for key, value in holder.state.get(parameter, {}).items():
                    if isinstance(value, torch.Tensor):
                        yield parameter, key, value
