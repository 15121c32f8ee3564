"""Run a worker in N threads at once and wait for all of them (the concurrency tests' shared harness)."""
import threading


def run_threads(worker, count, with_index=True):
    threads = [threading.Thread(target=worker, args=(i,) if with_index else ()) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
