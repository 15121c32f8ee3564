"""Each page preloads every module it imports, found from the modules' static import declarations.

The closure is checked two ways that do not share its code: here against hand-made module trees (folders, `../`,
several-line imports, and what only looks like an import), and, in tests/e2e/test_module_preloads_loaded.py (where the
browser fixtures live), against the script requests a real Chromium makes loading each page with its preloads
stripped: that test fails when the closure misses a module, or preloads one no page imports.
"""
import re
from pathlib import Path

from backend.api.module_preloads import module_closure, specifiers

STATIC_JS = Path(__file__).resolve().parents[2] / "static" / "js"


def test_closure_follows_imports_over_several_lines_exports_and_bare_imports(tmp_path):
    (tmp_path / "entry.js").write_text('import { a,\n  b } from "./a.js";\nexport { c } from "./c.js";\nimport "./side.js";\n')
    (tmp_path / "a.js").write_text('import { deep } from "./deep.js";\n// not an import: from "./comment.js"\n')
    (tmp_path / "c.js").write_text('import { a } from "./a.js";\n')
    (tmp_path / "side.js").write_text("")
    (tmp_path / "deep.js").write_text('import { gone } from "./missing.js";\n')
    (tmp_path / "unused.js").write_text("")
    assert module_closure(tmp_path, ("entry.js",)) == ["entry.js", "a.js", "c.js", "side.js", "deep.js"]


def test_closure_resolves_folders_and_parent_paths_as_the_browser_does(tmp_path):
    (tmp_path / "graph").mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "entry.js").write_text('import { draw } from "./graph/draw.js";\n')
    (tmp_path / "graph" / "draw.js").write_text('import { nav } from "./nav.js";\nimport { s } from "../store/state.js";\n')
    (tmp_path / "graph" / "nav.js").write_text('import { s } from "../store/state.js";\nimport { x } from "../../out.js";\n')
    (tmp_path / "store" / "state.js").write_text('import * as d3 from "d3";\n')
    assert module_closure(tmp_path, ("entry.js",)) == ["entry.js", "graph/draw.js", "graph/nav.js", "store/state.js"]


def test_only_static_declarations_count_not_comments_strings_templates_or_dynamic_imports():
    source = """
// import x from "./comment.js"
/* import "./block-comment.js" */
const words = "import y from './in-a-string.js'";
const text = `import z from "./in-a-template.js" ${ {a: 1}.a } and "./after-a-substitution.js"`;
const pattern = /["'`]/g, ratio = a / b / c;
export const path = "./a-string-not-a-module.js";
export function later() { return import("./dynamic.js"); }
import.meta.url;
import a, { b as c,
  d } from "./default-and-named.js";
import * as ns from '../namespace.js';
import "./side-effect.js";
export * from "./star.js";
export * as grouped from "./star-as.js";
export { e, f as g } from "./named-re-export.js";
export { h };
const nested = `x${`inner ${1}`}y`; import "./after-nested-templates.js";
"""
    assert specifiers(source) == ["./default-and-named.js", "../namespace.js", "./side-effect.js", "./star.js",
                                  "./star-as.js", "./named-re-export.js", "./after-nested-templates.js"]


def test_the_explorer_page_preloads_the_closure_of_its_entries(client):
    page = client.get("/").get_data(as_text=True)
    preloaded = re.findall(r'<link rel="modulepreload" href="/assets/\w+/js/([\w./-]+\.js)">', page)
    assert preloaded[:2] == ["pages/explorer.js", "views/editor/editor.js"] and len(preloaded) == len(set(preloaded))
    assert "pages/ledger.js" not in preloaded            # the ledger page's own module
    # Plotly is fetched ahead, neither parsed nor run (a prefetch: plotly-loader.js runs it after the graph, when a
    # chart needs it); not a parser-blocking script, nor a preload (which Chromium parses at once)
    assert re.search(r'<link rel="prefetch" href="/assets/\w+/vendor/plotly.min.js">', page)
    assert not re.search(r'<link rel="preload"[^>]*plotly.min.js', page)
    assert not re.search(r'<script src="[^"]*plotly.min.js">', page)


def test_the_ledger_page_preloads_its_own_modules(client):
    page = client.get("/ledger").get_data(as_text=True)
    preloaded = re.findall(r'<link rel="modulepreload" href="/assets/\w+/js/([\w./-]+\.js)">', page)
    assert preloaded == ["pages/ledger.js", "lib/dom.js", "lib/format.js", "state/api.js",    # api.js: every request
                         "state/trace-document.js", "state/trace-columns.js"]
