"""Independent counts of what autograd saves in a step, from saved_tensors_hooks around a plain run: every storage
it packed once (`packed_during`), and the most the packs held at one time (`held_at_once`)."""
import weakref

import torch


def _storage(tensor):
    """The storage a rank holds for `tensor`: a DTensor's local shard's."""
    return (tensor.to_local() if hasattr(tensor, "to_local") else tensor).untyped_storage()


def packed_during(step):
    """(bytes of the unique storages autograd packed while `step()` ran, how many packs there were); a DTensor
    counted by its local shard, what its rank holds."""
    storages, packs = {}, []

    def pack(tensor):
        storage = _storage(tensor)
        storages[storage.data_ptr()] = storage.nbytes()
        packs.append(None)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        step()
    return sum(storages.values()), len(packs)


def held_at_once(step):
    """(the most bytes of unique storages saved_tensors_hooks' packs held at one time while `step()` ran, how many
    packs there were).

    Each pack holds its tensor's storage (a DTensor's local shard's) until autograd lets go of the packed object,
    after the node that saved it ran. A storage holds the bytes it has *then*: FSDP2 resizes an unsharded
    parameter's storage to 0 bytes when it reshards after forward and back to its size when it gathers it again for
    backward, the same storage object all along, so a pack of it holds nothing in between. What is held can grow
    only when a pack is made or when a held storage is given its bytes back, which FSDP2 does before autograd
    unpacks the tensor; so it is counted at every pack and every unpack. Storages are told apart by the storage
    object (`_cdata`), not the data pointer, which a resize changes and a later allocation may reuse."""
    count, alive, most, packs = {}, {}, [0], [0]

    def held():
        most[0] = max(most[0], sum(storage.nbytes() for storage in alive.values()))

    def release(key):
        count[key] -= 1
        if not count[key]:
            del count[key], alive[key]

    class Pack:
        def __init__(self, tensor):
            self.tensor = tensor
            storage = _storage(tensor)
            key = storage._cdata
            count[key] = count.get(key, 0) + 1
            alive[key] = storage
            packs[0] += 1
            held()
            weakref.finalize(self, release, key)

    def unpack(pack):
        held()
        return pack.tensor

    with torch.autograd.graph.saved_tensors_hooks(Pack, unpack):
        step()
    return most[0], packs[0]
