"""The page's files under a version of their contents (backend/api/assets.py): kept a year by browsers, never stale."""
import re

from backend.api.assets import _digest

ASSET = re.compile(r'(?:src|href)="(/assets/(\w+)/[^"]+)"')


def test_every_file_a_page_names_is_served_under_the_current_version_and_kept_a_year(client):
    for path in ("/", "/ledger"):
        named = ASSET.findall(client.get(path).get_data(as_text=True))
        assert len(named) >= (50 if path == "/" else 5)
        assert len({version for _, version in named}) == 1          # the whole page in one version
        for url, _ in named:
            response = client.get(url)
            assert response.status_code == 200, url
            assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable", url


def test_an_address_of_another_version_gets_the_file_asked_for_again_each_time(client):
    url, version = ASSET.findall(client.get("/").get_data(as_text=True))[0]
    stale = client.get(url.replace(version, "000000000000"))
    assert stale.status_code == 200 and stale.data == client.get(url).data
    assert "no-cache" in stale.headers["Cache-Control"] and "immutable" not in stale.headers["Cache-Control"]


def test_outside_the_static_folder_is_a_404(client):
    url, version = ASSET.findall(client.get("/").get_data(as_text=True))[0]
    for path in ("../app.py", "%2e%2e/app.py", "..%2fapp.py"):
        assert client.get(f"/assets/{version}/{path}").status_code == 404


def test_an_edited_added_or_removed_file_is_a_new_version(tmp_path):
    (tmp_path / "js").mkdir()
    module = tmp_path / "js" / "a.js"
    module.write_text("export const a = 1;\n")
    first = _digest(tmp_path)
    assert _digest(tmp_path) == first
    module.write_text("export const a = 22;\n")                   # a different size
    edited = _digest(tmp_path)
    (tmp_path / "js" / "b.js").write_text("")
    added = _digest(tmp_path)
    (tmp_path / "js" / "b.js").unlink()
    assert len({first, edited, added}) == 3 and _digest(tmp_path) == edited
