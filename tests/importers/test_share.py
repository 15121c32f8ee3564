"""--share: the document reaches a real server's POST /api/traces with the Origin it needs, and the link opens;
a refusal comes back as the server's sentence and problem paths."""
import json
import urllib.request

import pytest

from app import create_app
from backend.driver import trace_spec
from backend.importers.share import ShareFailed, share
from backend.models import presets
from backend.trace.document_versions import pack
from tests.live import serving
from tests.settings import app_config


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    database = tmp_path_factory.mktemp("share") / "tapescope.sqlite"
    with serving(create_app(app_config(f"sqlite:///{database}"))) as url:
        yield url


@pytest.fixture(scope="module")
def document():
    return json.loads(json.dumps(trace_spec(presets.get("residual-unit"), wait_s=120.0, deadline_s=120.0)))


def test_a_shared_document_comes_back_from_its_link(server, document):
    link = share(document, server + "/")
    assert link.startswith(f"{server}/s/")
    with urllib.request.urlopen(link) as page:
        assert page.status == 200
    snapshot_id = link.rsplit("/", 1)[1]
    with urllib.request.urlopen(f"{server}/api/snapshots/{snapshot_id}") as answer:
        assert json.loads(answer.read())["trace"] == json.loads(json.dumps(pack(document)))   # stored packed (v2)


def test_a_refusal_names_the_status_and_the_paths(server, document):
    broken = json.loads(json.dumps(document))
    broken["summary"]["peak_bytes"] += 1
    with pytest.raises(ShareFailed, match=r"400(.|\n)*summary\.peak_bytes"):
        share(broken, server)


def test_an_address_that_is_not_a_server_is_refused_before_sending(document):
    with pytest.raises(ShareFailed, match="not a server address"):
        share(document, "ftp://example.org")
    with pytest.raises(ShareFailed, match="could not reach"):
        share(document, "http://127.0.0.1:9", timeout_s=2)
