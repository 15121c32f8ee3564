"""The key that signs session cookies: TAPESCOPE_SECRET_KEY, else one random key made once per instance folder.

Outside testing and debug there is no fixed fallback: a key anyone can read in the source would let anyone
forge a cookie naming another browser's workspace. The generated key is written once (O_EXCL, mode 0600), so
gunicorn workers starting together all end up with the same one, and it survives restarts.
"""
import os
import secrets
import time

KEY_FILE = "secret_key"
DEV_ONLY_SECRET = "dev-only-secret"      # testing and debug only
KEY_BYTES = 32


def instance_secret_key(instance_path: str) -> str:
    """The key kept in `instance_path`/secret_key, created on first call; a RuntimeError when it cannot be."""
    path = os.path.join(instance_path, KEY_FILE)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)
    except OSError as error:
        raise RuntimeError(f"Cannot create {path} ({error.strerror}): set TAPESCOPE_SECRET_KEY to a long random "
                           "string, the same on every server.") from error
    key = secrets.token_hex(KEY_BYTES)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key)
    return key


def _read(path: str, wait_s: float = 2.0) -> str:
    """The key another process wrote; it may be mid-write for a moment after creating the file."""
    deadline = time.monotonic() + wait_s
    while True:
        with open(path) as handle:
            key = handle.read().strip()
        if len(key) >= KEY_BYTES or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if len(key) < KEY_BYTES:
        raise RuntimeError(f"{path} holds no usable key: delete it to make a new one, or set TAPESCOPE_SECRET_KEY.")
    return key
