"""The user's mistakes the importer says in one sentence naming what to change, instead of a traceback: one base
class that the command line catches, and the translation of torch's own errors for the common ones."""
from contextlib import contextmanager

import torch


class ImportMistake(ValueError):
    """Something in the user's MODEL_FILE or flags to change; the message says what, in one sentence."""


class StepError(ImportMistake):
    """The training step cannot run as given: no loss to call backward on, nothing to train, no such device."""


@contextmanager
def cpu_only(doing):
    """Within: torch's "not compiled with CUDA" / "no NVIDIA driver" errors, on a machine without CUDA, become a
    StepError saying that `doing` (e.g. "build()") asked for a GPU this machine does not have."""
    try:
        yield
    except (AssertionError, RuntimeError) as error:
        if torch.cuda.is_available() or ("CUDA" not in str(error) and "NVIDIA" not in str(error)):
            raise
        raise StepError(f"{doing} put the model or a tensor on CUDA (.cuda() or .to('cuda')), but this machine has "
                        "no CUDA device: record on the CPU, e.g. device = 'cuda' if torch.cuda.is_available() "
                        f"else 'cpu' (torch said: {str(error).splitlines()[0]})") from None
