"""The ES modules a page's entry scripts import, directly or not, read from their import lines.

The explorer preloads them all (`<link rel="modulepreload">`): without the list, the browser finds the ~60 modules one
import depth at a time, a round trip per depth, before the page can start. Specifiers are resolved as the browser
resolves them: relative to the importing module (`./x.js`, `./sub/x.js`, `../x.js`), so a module moved into a folder
stays in the list.
"""
import posixpath
import re
from pathlib import Path

# `import … from "./x.js"`, `export … from "../y/x.js"` and `import "./x.js"`, over several lines. Bare specifiers
# (`"d3"`) and URLs are not modules of ours and are left to the browser.
IMPORT = re.compile(r"""^\s*(?:import|export)\b[^;"']*?["'](\.{1,2}/[\w./-]+\.js)["']""", re.MULTILINE)


def imports_of(name: str, source: str) -> list[str]:
    """The paths (relative to the page's module root) that the module at `name` imports, in source order."""
    base = posixpath.dirname(name)
    return [posixpath.normpath(posixpath.join(base, specifier)) for specifier in IMPORT.findall(source)]


def module_closure(folder: Path, entries: tuple[str, ...]) -> list[str]:
    """The paths (relative to `folder`) of `entries` and every module they import, in the order first reached.

    Missing files and specifiers that climb out of `folder` are skipped: the browser would report them, not us.
    """
    order: list[str] = []
    pending = list(entries)
    while pending:
        name = pending.pop(0)
        path = folder / name
        if name in order or name.startswith("../") or not path.is_file():
            continue
        order.append(name)
        pending.extend(imports_of(name, path.read_text(encoding="utf-8")))
    return order
