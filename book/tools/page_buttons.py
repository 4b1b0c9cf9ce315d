"""The download and launch buttons a notebook page of the book must show, and where they must point.

Read from the book's `_config.yml` (`Launch.read`): the repository URL and branch, the Binder,
Colab and JupyterHub hosts, and `launch_sources`, the folders of executed pages mapped to the
folders of the notebooks they were executed from. A notebook page (one whose source in the book's
folder is an .ipynb) must have a download button whose .ipynb link resolves to that notebook in the
build, and one launch button per host whose link starts with the host and names the repository,
its branch and the source notebook's path in the repository; that notebook must exist and not be
ignored by git, or the launched page opens nothing. `book/tools/check_book.py` runs these checks
on the buttons as the browser shows them.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import yaml

LAUNCHERS = {"Binder": "binderhub_url", "Colab": "colab_url", "JupyterHub": "jupyterhub_url"}
# The links of the page's download and launch dropdowns as (text, href), in the browser.
PAGE_BUTTONS = """
(() => {
  const links = sel =>
    [...document.querySelectorAll(sel)].map(a => [a.innerText.trim(), a.getAttribute('href')]);
  return {download: links('.dropdown-download-buttons a'), launch: links('.dropdown-launch-buttons a')};
})()
"""


@dataclass(frozen=True)
class Launch:
    """Where a notebook page's buttons must point, as the book's _config.yml says."""

    root: Path  # the book's folder (the one _config.yml is in)
    repository: str
    branch: str
    book_path: str  # the book's folder inside the repository ("" at its root)
    hosts: dict[str, str]  # {"Binder": url, ...}, "" where the config sets none
    sources: dict[str, str]  # {"book/executed/": "notebooks/"}

    @classmethod
    def read(cls, config: Path) -> Launch:
        values = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        repository = values.get("repository") or {}
        buttons = values.get("launch_buttons") or {}
        sphinx = (values.get("sphinx") or {}).get("config") or {}
        return cls(
            root=config.resolve().parent,
            repository=str(repository.get("url", "")).rstrip("/"),
            branch=str(repository.get("branch") or "master"),  # sphinx-book-theme's default
            book_path=str(repository.get("path_to_book", "")).strip("/"),
            hosts={name: str(buttons.get(key, "")).rstrip("/") for name, key in LAUNCHERS.items()},
            sources=dict(sphinx.get("launch_sources") or {}),
        )

    def is_notebook(self, page: Path) -> bool:
        """Whether the page (relative to the build) was made from a notebook of the book."""
        return (self.root / page).with_suffix(".ipynb").is_file()

    def source(self, page: Path) -> str:
        """The path, relative to the book's folder, of the notebook a page's launch buttons open."""
        name = page.with_suffix("").as_posix()
        for executed, source in self.sources.items():
            if name.startswith(executed):
                return f"{source}{name[len(executed) :]}.ipynb"
        return f"{name}.ipynb"

    def in_repository(self, page: Path) -> str:
        """That notebook's path in the repository."""
        return "/".join(p for p in (self.book_path, self.source(page)) if p)


def download_problems(name: Path, html_root: Path, links: list[list[str]]) -> list[str]:
    """The page's download dropdown must hold an .ipynb link to this page's notebook in the build."""
    hrefs = [href for _, href in links if href and urllib.parse.urlsplit(href).path.endswith(".ipynb")]
    if not hrefs:
        return [f"{name}: no .ipynb download button"]
    target = (html_root / name).parent / urllib.parse.unquote(urllib.parse.urlsplit(hrefs[0]).path)
    target = target.resolve()
    if (
        not target.is_file()
        or not target.is_relative_to(html_root.resolve())
        or target.name != name.with_suffix(".ipynb").name
    ):
        return [f"{name}: the .ipynb download {hrefs[0]} does not resolve to the page's notebook"]
    try:
        json.loads(target.read_text(encoding="utf-8"))["cells"]
    except (ValueError, KeyError, TypeError):
        return [f"{name}: the .ipynb download {hrefs[0]} is not a notebook"]
    return []


def launch_problems(name: Path, launch: Launch, links: list[list[str]]) -> list[str]:
    """One launch link per host, naming the host, the repository, its branch and the source path."""
    problems = []
    repository_id = urllib.parse.urlsplit(launch.repository).path.strip("/")  # org/name
    path = launch.in_repository(name)
    for provider, host in launch.hosts.items():
        hrefs = [href for text, href in links if text == provider and href]
        if not hrefs:
            unset = "" if host else f" (_config.yml sets no launch_buttons.{LAUNCHERS[provider]})"
            problems.append(f"{name}: no {provider} launch button{unset}")
            continue
        link = urllib.parse.unquote(hrefs[0])
        missing = [
            part for part in (repository_id or "repository.url", launch.branch, path) if part not in link
        ]
        if not link.startswith(host + "/"):
            missing.insert(0, host)
        if missing:
            problems.append(f"{name}: the {provider} button {hrefs[0]} does not name {', '.join(missing)}")
    return problems + source_problems(name, launch)


def source_problems(name: Path, launch: Launch) -> list[str]:
    """The notebook the launch buttons open must be a file the repository holds."""
    source = launch.source(name)
    if not (launch.root / source).is_file():
        return [f"{name}: its launch buttons open {source}, which is not in the book's folder"]
    git = ["git", "-C", str(launch.root), "check-ignore", "-q", source]
    ignored = subprocess.run(git, capture_output=True)
    if ignored.returncode == 0:
        return [f"{name}: its launch buttons open {source}, which git ignores (the repository lacks it)"]
    return []


def notebook_page_problems(name: Path, html_root: Path, launch: Launch, buttons: dict) -> list[str]:
    """Every problem with a notebook page's buttons, given them as PAGE_BUTTONS reads them."""
    buttons = buttons or {}
    return download_problems(name, html_root, buttons.get("download") or []) + launch_problems(
        name, launch, buttons.get("launch") or []
    )
