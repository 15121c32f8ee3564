"""Saving a workspace as the page does, for the API tests."""


def save_session(client, document, **request):
    """PUT /api/session as the page does: naming the version the browser holds (none before its first save), so
    a save over an existing workspace is never the versionless overwrite the server refuses with 409."""
    version = client.get("/api/session").get_json()["version"]
    body = {**document, "version": version} if version is not None and isinstance(document, dict) else document
    return client.put("/api/session", json=body, **request)
