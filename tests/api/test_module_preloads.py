"""The explorer preloads every module it imports, found from the modules' import lines."""
import re
from pathlib import Path

from backend.api.module_preloads import module_closure

STATIC_JS = Path(__file__).resolve().parents[2] / "static" / "js"


def test_closure_follows_imports_over_several_lines_exports_and_bare_imports(tmp_path):
    (tmp_path / "entry.js").write_text('import { a,\n  b } from "./a.js";\nexport { c } from "./c.js";\nimport "./side.js";\n')
    (tmp_path / "a.js").write_text('import { deep } from "./deep.js";\n// not an import: from "./comment.js"\n')
    (tmp_path / "c.js").write_text('import { a } from "./a.js";\n')
    (tmp_path / "side.js").write_text("")
    (tmp_path / "deep.js").write_text('import { gone } from "./missing.js";\n')
    (tmp_path / "unused.js").write_text("")
    assert module_closure(tmp_path, ("entry.js",)) == ["entry.js", "a.js", "c.js", "side.js", "deep.js"]


def test_the_explorer_page_preloads_every_module_its_scripts_import(client):
    page = client.get("/").get_data(as_text=True)
    preloaded = re.findall(r'<link rel="modulepreload" href="/static/js/([\w.-]+\.js)">', page)
    expected = module_closure(STATIC_JS, ("explorer.js", "editor.js"))
    assert preloaded == expected
    # reached only through other modules (explorer.js -> graph.js -> graph-fold.js -> layout.js), and never the ledger's
    assert {"graph-fold.js", "layout.js", "plotly-loader.js"} <= set(preloaded)
    assert "ledger.js" not in preloaded
    for name in preloaded:                   # each is an import some preloaded module makes, or an entry
        assert name in {"explorer.js", "editor.js"} or any(f'"./{name}"' in (STATIC_JS / m).read_text() for m in preloaded)
    # Plotly is fetched ahead but not run as a parser-blocking script (plotly-loader.js runs it after the graph)
    assert '<link rel="preload" as="script" href="/static/vendor/plotly.min.js">' in page
    assert '<script src="/static/vendor/plotly.min.js">' not in page
