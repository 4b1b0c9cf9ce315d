"""A Sphinx extension for the book: each inline script once per page.

Jupyter Book 1 registers sphinx-thebe's inline configuration script twice, so every page declares
`const THEBE_JS_URL` twice and the browser throws a SyntaxError on load; this drops repeated
scripts (same file, or none, and the same body) from each page's list before it is written.
"""

from __future__ import annotations


def _drop_repeated_scripts(app, pagename, templatename, context, doctree) -> None:
    seen, kept = set(), []
    for script in context.get("script_files", []):
        key = (getattr(script, "filename", None) or "", getattr(script, "attributes", {}).get("body", ""))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    if "script_files" in context:
        context["script_files"][:] = kept


def setup(app):
    app.connect("html-page-context", _drop_repeated_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
