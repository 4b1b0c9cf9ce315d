"""The setup every chapter notebook shares, in one call, and the closing list of its outputs.

    from littlekit.analysis.notebook import setup_chapter   # before transformers is imported
    chapter = setup_chapter(run_name, "fasttext_fit", data_root=data_root, torch_threads=1)
    run, out_dir = chapter.run, chapter.out_dir
    ...
    chapter.print_outputs(extra=[model_path])

Importing this module sets HF_HUB_OFFLINE=1 (the Hub client reads it when it is imported, so
import this first): chapters run on local data and models only. It also silences tqdm's
"IProgress not found" notice, which transformers triggers on import where no widgets are installed.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Iterable, Mapping  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pandas as pd  # noqa: E402

from littlekit import config, paper, runs  # noqa: E402
from littlekit.analysis import findings, plots  # noqa: E402

warnings.filterwarnings("ignore", message="IProgress not found")  # no widgets in a papermill run


@dataclass
class Chapter:
    """A chapter's run folder, its own output folder, its data root and its start time."""

    run: Path
    out_dir: Path
    data_root: Path
    started: float = field(default_factory=time.perf_counter)
    found: list[findings.Finding] = field(default_factory=list)
    glued: dict[str, str] = field(default_factory=dict)  # what the prose quotes, as it shows it

    def seconds(self) -> float:
        """Seconds since the chapter started."""
        return time.perf_counter() - self.started

    def glue(self, key: str, value: Any) -> None:
        """Put `value` into the chapter's prose: markdown reads it as `{glue:text}`key``."""
        findings.glue(key, value)
        self.glued[key] = str(value)

    def show_glued(self) -> None:
        """Print what the prose quotes, by key: in Jupyter (where `{glue:text}` is not rendered, as in
        a course edition, which writes the key in code font instead) this is where a reader finds it."""
        for key, value in self.glued.items():
            print(f"{key} = {value}")

    def glue_paper(self, *names: str) -> None:
        """Glue the paper's numbers (`littlekit.paper.NUMBERS`) as `paper_<name>`, as the paper
        prints them."""
        for name in names:
            self.glue(f"paper_{name}", paper.number(name).shown)

    def finding(self, claim: str, ours: str, verdict: str, would_change: str, paper_figure: str = "") -> None:
        """Record what this run found for one of the paper's claims (`littlekit.paper.CLAIMS`);
        `findings_box` shows them all."""
        self.found.append(findings.Finding(claim, ours, verdict, would_change, paper_figure))

    def findings_box(self) -> None:
        """Show the chapter's findings beside the paper's and write them to `findings.json`."""
        findings.show_box(self.found, self.out_dir)

    def print_outputs(self, extra: Iterable[str | os.PathLike] = (), timing: str = "") -> None:
        """List the output folder's entries (and `extra` paths) with their sizes, then the run time."""
        paths = sorted({*self.out_dir.iterdir(), *map(Path, extra)})
        for path in paths:
            size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else None
            size = path.stat().st_size if size is None else size
            print(f"{_shown(path)}{'/' if path.is_dir() else ''}  ({size:,} bytes)")
        print(f"chapter ran in {self.seconds():.0f}s" + (f" ({timing})" if timing else ""))


def setup_chapter(
    run_name: str,
    product: str,
    *,
    data_root: str | os.PathLike | None = None,
    torch_threads: int | None = None,
    precision: int = 3,
    max_colwidth: int | None = 100,
    show: Mapping[str, Any] | None = None,
    subfolder: str | None = None,
) -> Chapter:
    """Offline, one figure style, table display options, torch threads; the run and output folders.

    `product` names the chapter's output folder in the run layout (`littlekit.runs`). With
    `torch_threads`, torch uses that many CPU threads and transformers shows no progress bars.
    `show` adds lines to the printed header (label -> value); `subfolder` puts the outputs in a
    folder of the product's (a chapter's exercises:
    `setup_chapter(run, "exercises", subfolder="ex07")`). The header says how the data root
    was chosen; a given root that is missing or a file fails here (`config.data_root`), and a
    file it lacks fails where it is read, naming the root (`config.data_path`).
    """
    plots.use_book_style()
    pd.set_option("display.precision", precision)
    pd.set_option("display.max_colwidth", max_colwidth)
    if torch_threads is not None:
        import torch
        from transformers.utils import logging as hf_logging

        torch.set_num_threads(torch_threads)
        hf_logging.disable_progress_bar()
    run = config.run_dir(run_name)
    out_dir = runs.folder(run, product)
    if subfolder is not None:
        out_dir = out_dir / subfolder
        out_dir.mkdir(parents=True, exist_ok=True)
    chapter = Chapter(run=run, out_dir=out_dir, data_root=config.data_root(data_root))
    root_line = f"{chapter.data_root} ({config.data_root_origin(data_root)})"
    for label, value in {"data root": root_line, "outputs": chapter.out_dir, **(show or {})}.items():
        print(f"{label:<10}: {value}")
    return chapter


def _shown(path: Path) -> Path:
    """A path relative to the checkout when it lies inside it (shorter in the book)."""
    return path.relative_to(config.REPO_ROOT) if path.is_relative_to(config.REPO_ROOT) else path
