"""Tapescope's web entry point: the Flask application factory; `python app.py` serves 127.0.0.1:5000."""
import os

from backend import blas

blas.set_environment()          # before numpy loads its BLAS: the work price assumes one thread (backend/blas.py)

from flask import Flask  # noqa: E402
from werkzeug.middleware.proxy_fix import ProxyFix  # noqa: E402


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def create_app(test_config=None, instance_path=None):
    """Build a Flask app; `test_config` overrides settings (tests pass a temporary database).

    Settings from the environment: TAPESCOPE_SECRET_KEY (signs the session cookie; without it a random key is
    made once in the instance folder), TAPESCOPE_SECURE_COOKIES=1 (HTTPS only), TAPESCOPE_PROXY_HOPS=N (trust N
    reverse proxies' X-Forwarded-* headers, so rate limits count real clients), DATABASE_URL (docs/storage.md).
    """
    app = Flask(__name__, instance_relative_config=True, instance_path=instance_path)
    app.config.from_mapping(
        SECRET_KEY=os.environ.get("TAPESCOPE_SECRET_KEY"),
        MAX_CONTENT_LENGTH=1 * 1024 * 1024,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=_env_flag("TAPESCOPE_SECURE_COOKIES"),
        PROXY_HOPS=int(os.environ.get("TAPESCOPE_PROXY_HOPS", "0")),
    )
    if test_config is not None:
        app.config.update(test_config)
    os.makedirs(app.instance_path, exist_ok=True)

    from backend.secret_key import DEV_ONLY_SECRET, instance_secret_key
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = DEV_ONLY_SECRET if app.testing or app.debug else instance_secret_key(app.instance_path)
    if app.config["PROXY_HOPS"]:
        hops = app.config["PROXY_HOPS"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)

    from backend.store import init_store
    init_store(app)

    from backend.api import register_blueprints
    register_blueprints(app)
    blas.pin_one_thread()           # and every BLAS the engine and the planner loaded, whoever imported numpy first
    from backend.api.limits import init_rate_limits
    init_rate_limits(app)
    return app


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=5000)
