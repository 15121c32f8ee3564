"""An independent count of what autograd saves in a step: saved_tensors_hooks around a plain run, each storage once."""
import torch


def packed_during(step):
    """(bytes of the unique storages autograd packed while `step()` ran, how many packs there were); a DTensor
    counted by its local shard, what its rank holds."""
    storages, packs = {}, []

    def pack(tensor):
        storage = (tensor.to_local() if hasattr(tensor, "to_local") else tensor).untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        packs.append(None)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        step()
    return sum(storages.values()), len(packs)
