"""The sweep meter against hand counts: FLOPs from the registry, bytes from the engine's events and the tangents."""
import numpy as np

from backend.sweeps.meter import metering
from backend.tape import OPS, backward, jvp, parameter, tensor


def test_a_jvp_sweep_counts_each_value_with_its_tangent():
    x = tensor(np.ones(10))
    with metering() as meter:
        out, tangent = jvp(lambda a: (a * 2.0).sum(), (x,), (np.ones(10),))
    # a*2: an 80-byte value and an 80-byte tangent; sum: 8 + 8 while a*2 is still held; nothing saved
    assert meter.peak_bytes == 80 + 80 + 8 + 8
    assert meter.saved_bytes == 0
    mul_flops = OPS["mul"].flops(((10,), ()), (10,), {})
    sum_flops = OPS["sum"].flops(((10,),), (), {"dim": None, "keepdim": False})
    assert meter.primal_flops == mul_flops + sum_flops
    assert meter.derivative_flops == mul_flops + sum_flops          # one input carries a tangent, at each op
    assert float(tangent.data) == 20.0


def test_a_vjp_sweep_counts_the_adjoints_and_each_input_needing_grad():
    a, b = parameter(np.ones((4, 3))), parameter(np.ones((3, 2)))
    with metering() as forward:
        out = (a @ b).sum()
    assert forward.saved_bytes == a.data.nbytes + b.data.nbytes       # matmul saves both inputs
    matmul_flops = 2 * 4 * 2 * 3
    with metering() as sweep:
        backward(out)
    sum_flops = OPS["sum"].flops(((4, 2),), (), {"dim": None, "keepdim": False})
    assert sweep.derivative_flops == 2 * matmul_flops + sum_flops     # da and db each cost the product's FLOPs
    assert sweep.peak_bytes >= a.data.nbytes + b.data.nbytes          # the two grads are allocated in the sweep


def test_a_jvp_sweep_under_the_trace_recorder_records_no_entries():
    """The recorder hears forward mode's "tangent" events and keeps nothing of them: no tape entry, no step."""
    from backend.tape.events import listening
    from backend.trace.recorder import Recorder
    recorder = Recorder()
    x = tensor(np.ones(3))
    with listening(recorder):
        jvp(lambda a: (a * a).sum(), (x,), (np.ones(3),))
    assert recorder.tape == [] and recorder.steps == []
