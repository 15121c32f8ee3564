"""What a rank's recorder cannot see as ops, seen while its step is recorded: which issued c10d collective a
`Work.wait()` waited for (the Work Python holds is a new wrapper each time, so it is matched by the buffers its
result holds, else the oldest still pending), and FSDP2's frees and re-allocations of its unsharded parameters
(free_storage / alloc_storage resize a storage: no op, no storage death)."""
import contextlib

from backend.importers.torch_storages import storage_address

_issued_works = []                          # (result tensors' data pointers, recorder, tape index), while recording


def remember_work(recorder, index):
    """An issued c10d collective, for the Work.wait() that will wait for it (the Work itself is a new wrapper
    each time Python sees it: it is matched by its result's buffers)."""
    entry = recorder.tape[index]
    pointers = {recorder.storages[s]["address"] for s in entry["collective"]["buffers"]}
    _issued_works.append((pointers, recorder, index))


@contextlib.contextmanager
def watching_distributed(recorder):
    """While the step is recorded: Work.wait() says which issued collective it waited for (matched by the
    tensors its result holds, else the oldest pending), and FSDP2's storage frees and allocs are told."""
    from torch.distributed.distributed_c10d import Work
    original_wait = Work.wait

    def wait(work, *args, **kwargs):
        result = original_wait(work, *args, **kwargs)
        _match_wait(work)
        return result

    patched = [(Work, "wait", original_wait)]
    Work.wait = wait
    try:
        from torch.distributed.fsdp._fully_shard import _fsdp_param, _fsdp_param_group
    except ImportError:
        _fsdp_param = _fsdp_param_group = None
    if _fsdp_param is not None:
        for module, name in ((_fsdp_param, "free_storage"), (_fsdp_param, "alloc_storage"),
                             (_fsdp_param_group, "alloc_storage")):
            original = getattr(module, name)
            patched.append((module, name, original))
            setattr(module, name, _resizing(original, recorder))
    try:
        yield recorder
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)
        _issued_works.clear()


def _resizing(original, recorder):
    def resize(tensor):
        before = _where(tensor)
        original(tensor)
        if _where(tensor) != before:
            recorder.storage_resized(tensor, before[0])
    return resize


def _where(tensor):
    """A storage's address and size: a resize moves a real one's address, and only the size of a fake one's."""
    storage = tensor.untyped_storage()
    return storage_address(storage), storage.nbytes()


def _match_wait(work):
    _issued_works[:] = [item for item in _issued_works if item[1].is_pending(item[2])]
    try:
        addresses = {f"0x{storage_address(t.untyped_storage()):x}" for t in work.result()}
    except (RuntimeError, TypeError, AttributeError):
        addresses = set()
    for position, (pointers, recorder, index) in enumerate(_issued_works):
        if addresses and addresses & pointers:
            break
    else:
        position = 0 if _issued_works else None
    if position is None:
        return
    _, recorder, index = _issued_works.pop(position)
    recorder.waited_work(index)
