"""The ES modules a page's entry scripts import, directly or not, read from their static import declarations.

A page preloads them all (`<link rel="modulepreload">`): without the list, the browser finds the ~60 modules one
import depth at a time, a round trip per depth, before the page can start. Each module is read as the browser reads
it, token by token (comments, strings, template literals and regular expressions skipped), and every static
declaration counts: `import … from "…"`, `import "…"` and `export … from "…"`, over as many lines as they take. A
dynamic `import("…")` is left out (the browser fetches it when it runs, not at start), as is a string that merely
looks like a path. Specifiers are resolved as the browser resolves them: relative to the importing module (`./x.js`,
`./sub/x.js`, `../x.js`), so a module moved into a folder stays in the list.
"""
import posixpath
import re
from pathlib import Path

# One token at a time: whitespace and comments (dropped), a string, a template literal's start, a name, a number, or
# one punctuator. A `/` is a regular expression where a value may start, else division (see _tokens).
_TOKEN = re.compile(r"""
    (?P<skip>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<template>`)
  | (?P<name>[A-Za-z_$][\w$]*)
  | (?P<number>\.?\d[\w.]*)
  | (?P<punct>\.\.\.|\?\.|=>|[{}()\[\];,.<>+\-*%&|^!~?:=/@#])
""", re.VERBOSE | re.DOTALL)
_REGEX = re.compile(r"/(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[A-Za-z]*")
_TEMPLATE_TEXT = re.compile(r"(?:[^`\\$]|\\.|\$(?!\{))*", re.DOTALL)
# After these a `/` divides (they end a value); after anything else it starts a regular expression.
_VALUE_END = {")", "]", "}"}
_KEYWORDS_BEFORE_VALUE = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case",
                          "do", "else", "yield", "await"}
# What an import's or a re-export's clause may hold between the keyword and `from`.
_CLAUSE = {"{", "}", ",", "*"}


def _tokens(source: str):
    """(kind, text) for each token of a module's source that matters to its imports: names, strings, punctuators."""
    position, previous = 0, None
    templates = []          # for each open `${` inside a template literal, the brace depth it opened at
    depth = 0
    while position < len(source):
        if source[position] == "/" and not source.startswith(("//", "/*"), position) and not (
                previous and (previous[0] in ("name", "number", "string") and previous[1] not in _KEYWORDS_BEFORE_VALUE
                              or previous[1] in _VALUE_END)):
            match = _REGEX.match(source, position)
            if match:
                position, previous = match.end(), ("regex", match.group())
                continue
        if source[position] == "}" and templates and templates[-1] == depth:
            templates.pop()                           # the end of a `${…}`: back inside the template's text
            position = _template_rest(source, position + 1, templates, depth)
            previous = ("string", "`")
            continue
        match = _TOKEN.match(source, position)
        if not match:                                 # a character no module of ours uses: step over it
            position += 1
            continue
        position, kind, text = match.end(), match.lastgroup, match.group()
        if kind == "skip":
            continue
        if kind == "template":
            position = _template_rest(source, position, templates, depth)
            previous = ("string", "`")
            continue
        if text == "{":
            depth += 1
        elif text == "}":
            depth -= 1
        previous = (kind, text)
        yield previous


def _template_rest(source, position, templates, depth):
    """Skip a template literal's text from `position`: past its closing backtick, or into a `${` (noted in
    `templates`, so its closing brace resumes the text)."""
    position = _TEMPLATE_TEXT.match(source, position).end()
    if source.startswith("${", position):
        templates.append(depth)
        return position + 2
    return position + 1


def specifiers(source: str) -> list[str]:
    """The specifiers of a module's static import declarations and re-exports, in source order."""
    tokens = list(_tokens(source))
    found = []
    for i, (kind, text) in enumerate(tokens):
        if kind != "name" or text not in ("import", "export") or (i and tokens[i - 1][1] in (".", "?.")):
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else ("", "")
        if text == "import" and following[0] == "string":          # import "./side-effect.js"
            found.append(following[1][1:-1])
            continue
        if text == "export" and following[1] not in ("{", "*"):    # export const / function / default: no module
            continue
        j = i + 1
        while j < len(tokens) and (tokens[j][1] in _CLAUSE or tokens[j][0] == "name" and tokens[j][1] != "from"
                                   or tokens[j][0] == "string" and tokens[j - 1][1] in ("{", ",")):
            j += 1
        if j + 1 < len(tokens) and j > i + 1 and tokens[j][1] == "from" and tokens[j + 1][0] == "string":
            found.append(tokens[j + 1][1][1:-1])
    return found


def imports_of(name: str, source: str) -> list[str]:
    """The paths (relative to the page's module root) of the modules of ours that the module at `name` imports.

    Bare specifiers (`"d3"`) and URLs are not modules of ours and are left to the browser.
    """
    base = posixpath.dirname(name)
    return [posixpath.normpath(posixpath.join(base, specifier)) for specifier in specifiers(source)
            if specifier.startswith(("./", "../"))]


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
