"""One BLAS thread per engine run: the work price (backend/driver/work.py) is calibrated on one thread, and a
worker's requests run one engine at a time each on its own core.

With the default of one BLAS thread per core, a request the price accepts burned 7.5-12.4 s of CPU (0.85-0.9 s on
one thread) and came back 503 at the deadline under load. `ENVIRONMENT` is set before numpy loads (app.py's first
lines, gunicorn.conf.py); `pin_one_thread()` also limits every BLAS library already loaded (threadpoolctl), for
a process that imported numpy before the app.
"""
import os

ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def set_environment():
    """The thread counts for BLAS libraries loaded from now on (a library reads them when it loads)."""
    os.environ.update(ENVIRONMENT)


def pin_one_thread():
    """Every BLAS library this process has loaded, and any it loads later, on one thread."""
    set_environment()
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=1, user_api="blas")
