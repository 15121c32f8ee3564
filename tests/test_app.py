"""The app factory serves the explorer page."""


def test_index_page_served(client):
    response = client.get("/")
    assert response.status_code == 200
    assert b"Tapescope" in response.data
