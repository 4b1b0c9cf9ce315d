"""A Sphinx extension for the book: launch buttons open the committed source notebook.

The book shows executed copies (book/executed/NN_*.ipynb, written by `make notebooks` and not
committed), so the path sphinx-book-theme puts in its Binder, Colab and JupyterHub links names a
file the repository does not hold. `launch_sources` (set in _config.yml) maps a folder of executed
pages to the folder of their sources ({"book/executed/": "notebooks/"}); this rewrites each launch
link of a page under such a folder to the source notebook, and warns when that file is missing.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
LAUNCH_GROUP = "launch-buttons"  # the label sphinx-book-theme gives its launch dropdown


def source_path(pagename: str, sources: dict[str, str]) -> str | None:
    """The repository path (without the book's folder) of the notebook a page was executed from,
    None for a page under no folder of `sources`."""
    for executed, source in sources.items():
        if pagename.startswith(executed):
            return source + pagename[len(executed) :] + ".ipynb"
    return None


def _point_launches_at_sources(app, pagename, templatename, context, doctree) -> None:
    source = source_path(pagename, app.config.launch_sources)
    groups = [b for b in context.get("header_buttons", []) if b.get("label") == LAUNCH_GROUP]
    if source is None or not groups:
        return
    book = app.config.html_theme_options.get("path_to_docs", "").strip("/")
    prefix = f"{book}/" if book else ""
    shown, launched = f"{prefix}{pagename}.ipynb", f"{prefix}{source}"
    for button in groups[0]["buttons"]:
        if "url" not in button:
            continue
        if shown not in button["url"]:
            what = f"the {button.get('text')} link"
            LOGGER.warning(f"{pagename}: {what} does not name {shown}: {button['url']}")
        button["url"] = button["url"].replace(shown, launched)
    if not (Path(app.confdir) / source).is_file():
        LOGGER.warning(f"{pagename}: its launch buttons open {launched}, which is not in the book's folder")


def setup(app):
    app.add_config_value("launch_sources", {}, "html", types=[dict])
    # after sphinx-book-theme builds the launch links (priority 501), before the page is written
    app.connect("html-page-context", _point_launches_at_sources, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
