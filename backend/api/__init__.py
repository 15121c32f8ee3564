"""The web API: one blueprint per area, registered on the app by `register_blueprints`."""


def register_blueprints(app):
    from backend.api.assets import assets
    app.register_blueprint(assets)
    from backend.api.pages import pages
    app.register_blueprint(pages)
    from backend.api.trace import trace_api
    app.register_blueprint(trace_api)
    from backend.api.schema import schema_api
    app.register_blueprint(schema_api)
    from backend.api.levers import levers_api
    app.register_blueprint(levers_api)
    from backend.api.modes import modes_api
    app.register_blueprint(modes_api)
    from backend.api.ledger import ledger; app.register_blueprint(ledger)
    from backend.api.security import security
    app.register_blueprint(security)
    from backend.api.errors import api_errors
    app.register_blueprint(api_errors)
    from backend.api.sessions import sessions
    app.register_blueprint(sessions)
    from backend.api.snapshots import snapshots
    app.register_blueprint(snapshots)
    from backend.api.traces import traces_api
    app.register_blueprint(traces_api)
    from backend.api.compression import register_compression
    register_compression(app)
