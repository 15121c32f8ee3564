"""A throwaway PostgreSQL cluster on 127.0.0.1 for the suite, started per test process and removed at its end.

`$TAPESCOPE_TEST_POSTGRES_URL` wins when set (a database you made). Otherwise Debian's `postgresql` binaries
(/usr/lib/postgresql/<version>/bin, installed by `make test` beside chromium-headless-shell) initialise a cluster in
a temporary folder on a free port; initdb refuses to run as root, so as root the cluster belongs to the `postgres`
user. Each pytest-xdist worker has its own cluster, so no two workers share a database. Without the binaries the
PostgreSQL cases skip, saying how to get them.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager

ENV_URL = "TAPESCOPE_TEST_POSTGRES_URL"
DATABASE = "tapescope_test"


class Unavailable(Exception):
    """PostgreSQL cannot be started here; the message says why and what to install."""


def postgres_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise Unavailable("no PostgreSQL server here: apt-get install postgresql (make test does), "
                          f"or set {ENV_URL} to a throwaway database")
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_owner(command: list[str], user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--", *command] if user else command


@contextmanager
def throwaway_cluster():
    """Yield a SQLAlchemy URL for a fresh, empty database; the cluster is stopped and deleted afterwards."""
    if os.environ.get(ENV_URL):
        yield os.environ[ENV_URL]
        return
    bin_dir = postgres_bin()
    user = "postgres" if os.geteuid() == 0 else None
    owner = pwd.getpwnam(user).pw_name if user else pwd.getpwuid(os.geteuid()).pw_name
    folder = tempfile.mkdtemp(prefix="tapescope-pg-")
    data, sockets = os.path.join(folder, "data"), os.path.join(folder, "run")
    os.mkdir(sockets)
    if user:
        shutil.chown(folder, user)
        shutil.chown(sockets, user)
    port = _free_port()
    run = lambda *command: subprocess.run(_as_owner(list(command), user), check=True, capture_output=True,  # noqa: E731
                                          text=True, cwd=folder)
    try:
        run(f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", owner, "-E", "UTF8", "--no-sync")
        run(f"{bin_dir}/pg_ctl", "-D", data, "-l", os.path.join(folder, "server.log"), "-w", "-t", "30", "-o",
            f"-h 127.0.0.1 -p {port} -k {sockets} -F -c fsync=off -c full_page_writes=off", "start")
        run(f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", owner, DATABASE)
        yield f"postgresql+psycopg://{owner}@127.0.0.1:{port}/{DATABASE}"
    except subprocess.CalledProcessError as error:
        raise Unavailable(f"{error.cmd[0 if not user else 3]} failed: {error.stderr.strip()}") from error
    finally:
        subprocess.run(_as_owner([f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], user),
                       capture_output=True)
        time.sleep(0.1)
        shutil.rmtree(folder, ignore_errors=True)
