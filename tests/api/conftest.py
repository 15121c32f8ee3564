"""API fixtures: a stand-in tracer (the storage contract does not depend on the engine) and app factories."""
import pytest

import backend.api.snapshots as snapshots_api
from app import create_app
from backend.models.errors import CapError, SpecError
from tests.settings import app_config

FAKE_STEP_COUNT = 30


def fake_trace_spec(spec, checkpoint=None, **engine_limits):
    """A deterministic trace document shaped like the real one, with the spec and checkpoint folded in."""
    if spec.get("bad"):
        raise SpecError([{"path": "spec.bad", "message": "Remove 'bad'."}])
    if spec.get("huge"):
        raise CapError("parameters", 1_000_000, 5_000_000, path="spec.layers")
    return {"schema_version": 1, "engine_version": "fake-0", "spec": spec, "checkpoint": checkpoint,
            "steps": [{"index": i} for i in range(FAKE_STEP_COUNT)], "summary": {"peak_bytes": 1234}}


@pytest.fixture
def fake_trace(monkeypatch):
    monkeypatch.setattr(snapshots_api, "_trace_spec", lambda: fake_trace_spec)
    return fake_trace_spec


@pytest.fixture
def make_app(database_url):
    """Build apps on one database, as a restarted server would."""
    def build(**config):
        return create_app(app_config(database_url, **config))
    return build

