"""GET /api/ledger and GET /ledger over HTTP: the issue's keys, defaults, and 400s (never 500s) for bad input."""
import pytest

ISSUE_KEYS = {"params", "resident_bytes", "per_layer_bytes", "rows", "activation_bytes", "head_bytes",
              "per_token_bytes", "checkpoint", "k_star", "max_batch"}
MIB = 1 << 20


def test_issue_example_query(client):
    response = client.get("/api/ledger?layers=12&hidden=2048&heads=16&vocab=50257&batch=8&seq=1024&dtype=fp32"
                          "&position_embeddings=false")
    assert response.status_code == 200
    body = response.get_json()
    assert ISSUE_KEYS <= set(body)
    assert body["params"] == 707_229_696
    assert body["per_layer_bytes"] == 2208 * MIB + 4 * 8192 * 4 + 4
    assert [set(point) >= {"k", "peak_bytes", "compute_factor"} for point in body["checkpoint"]] == [True] * 3
    assert {"name", "shape", "dtype", "bytes", "op"} <= set(body["rows"][0])
    assert body["max_batch"] == 3
    assert body["korthikanti"]["formula_fp16_bytes"] == 1184 * MIB


def test_defaults_fill_unspecified_fields(client):
    assert client.get("/api/ledger").get_json() == client.get("/api/ledger?layers=12&batch=8").get_json()


def test_query_changes_the_ledger(client):
    body = client.get("/api/ledger?attention=flash&dtype=fp16&mixed_precision=true&device_gib=80").get_json()
    assert body["config"]["attention"] == "flash" and body["config"]["device_gib"] == 80
    assert not [row for row in body["rows"] if row["group"] == "attention_matrix"]
    assert body["resident_bytes"] == 16 * body["params"]
    assert body["device_bytes"] == 80 << 30


@pytest.mark.parametrize("query, path", [
    ("layers=abc", "layers"), ("layers=0", "layers"), ("layers=100000", "layers"), ("layers=", "layers"),
    ("dtype=fp8", "dtype"), ("attention=%3Cscript%3E", "attention"), ("heads=5", "heads"),
    ("mixed_precision=true", "mixed_precision"), ("batch=65536", "batch"), ("colour=red", "colour"),
    ("layers=1&layers=2", "layers"), ("device_gib=-1", "device_gib"), ("seq=1e6", "seq"),
    ("mlp_ratio=nan", "mlp_ratio"), ("dropout=2", "dropout"),
])
def test_bad_values_are_400_with_problems(client, query, path):
    response = client.get(f"/api/ledger?{query}")
    assert response.status_code == 400
    body = response.get_json()
    assert set(body) == {"error", "problems", "problem_count"}
    assert body["problem_count"] == len(body["problems"])
    assert body["error"].startswith("The ledger config is invalid")
    assert path in [problem["path"] for problem in body["problems"]]
    assert all(set(problem) == {"path", "message"} for problem in body["problems"])


def test_odd_input_never_500s(client):
    odd = ["%00", "%FF%FE", "layers=" + "9" * 5000, "a" * 3000 + "=1", "layers=1%0A2", "hidden=%E2%80%8B64",
           "optimizer[]=adam", "=", "&&&", "batch=8;seq=1"]
    for query in odd:
        response = client.get(f"/api/ledger?{query}")
        assert response.status_code in (200, 400), query
        assert response.is_json, query


def test_largest_allowed_config_answers(client):
    response = client.get("/api/ledger?layers=512&hidden=65536&heads=1024&vocab=1048576&batch=16&seq=1048576"
                          "&mlp_ratio=16")
    assert response.status_code == 200
    assert response.get_json()["per_layer_bytes"] > 1 << 50


def test_page_serves_the_form_and_the_module(client):
    response = client.get("/ledger?layers=24&hidden=1024")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert 'type="module"' in html and "js/pages/ledger.js" in html and "vendor/plotly.min.js" in html
    assert 'name="layers"' in html and 'name="attention"' in html
    for chunk in html.split("<script")[1:]:
        assert "src=" in chunk.split(">", 1)[0], "inline script"
