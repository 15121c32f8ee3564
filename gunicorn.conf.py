"""gunicorn settings for Tapescope:  .venv/bin/gunicorn -c gunicorn.conf.py 'app:create_app()'

A trace request is priced to finish within WORK_BUDGET_US (5 s of CPU) and stopped at DEADLINE_S (8 s of wall
time) with a 503, so no request runs into `timeout`: gunicorn never kills a worker for a trace. Each worker
process has its own engine (one run at a time); its threads answer everything else — presets, snapshots,
sessions — at once, and a second trace in the same worker gets 503 + Retry-After after ENGINE_WAIT_S (1 s).
"""
import multiprocessing

from backend import blas

blas.set_environment()      # one BLAS thread per worker, before any worker loads numpy (backend/blas.py)

bind = "127.0.0.1:8000"
workers = multiprocessing.cpu_count()        # one engine per core
worker_class = "gthread"
threads = 4
timeout = 30                                  # > the 8 s deadline + 1 s engine wait + sending the document
graceful_timeout = 30
