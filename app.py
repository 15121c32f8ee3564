"""Tapescope's web entry point: the Flask application factory; `python app.py` serves 127.0.0.1:5000."""
import os

from flask import Flask


def create_app(test_config=None):
    """Build a Flask app; `test_config` overrides settings (tests pass a temporary database)."""
    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(
        SECRET_KEY=os.environ.get("TAPESCOPE_SECRET_KEY", "dev-only-secret"),
        MAX_CONTENT_LENGTH=1 * 1024 * 1024,
        SESSION_COOKIE_SAMESITE="Lax",
    )
    if test_config is not None:
        app.config.update(test_config)
    os.makedirs(app.instance_path, exist_ok=True)

    from backend.store import init_store
    init_store(app)

    from backend.api import register_blueprints
    register_blueprints(app)
    return app


if __name__ == "__main__":
    create_app().run(host="127.0.0.1", port=5000)
