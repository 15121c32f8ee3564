"""The web API: one blueprint per area, registered on the app by `register_blueprints`."""


def register_blueprints(app):
    from backend.api.pages import pages
    app.register_blueprint(pages)
