"""Build the embedded `data/` folder from the real data (`littlekit data build --from ... --out data`).

The build reads only the source folder it is given, writes every file deterministically (two runs
give byte-identical files) and ends with `MANIFEST.tsv` (path, bytes, sha256, source).
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from littlekit.config import EMBEDDED_DATA
from littlekit.databuild.aoa import build_aoa
from littlekit.databuild.clear import build_clear, load_clear_excerpts
from littlekit.databuild.common import BuildLog, write_text
from littlekit.databuild.copies import build_gsm8k, build_mathcamps, build_onestop, build_wordlists
from littlekit.databuild.demo import build_demo
from littlekit.databuild.informational import build_graded_informational
from littlekit.databuild.judge_labels import build_judge_labels
from littlekit.databuild.k5_rewrites import build_k5_rewrites
from littlekit.databuild.passages import build_commoncoretext
from littlekit.databuild.standards import build_standards
from littlekit.io import sha256_file

MANIFEST = "MANIFEST.tsv"
# Folders written by hand for the project, not derived from the real data: a build keeps them
# (copied from the repository's data/ when it builds elsewhere) and lists them in MANIFEST.tsv.
AUTHORED: dict[str, str] = {"science_clues": "written for littlecurriculum (CC BY 4.0)"}
__all__ = ["build_all", "add_data_parser", "run_data_command", "write_manifest"]


def build_all(source: Path, out: Path, force: bool = False) -> None:
    """Build every embedded dataset from `source` (a copy of the shared real data) into `out`.

    The build writes into a fresh folder beside `out` and moves its files into `out` only once
    every step has succeeded, so a failing build leaves `out` as it was. An `out` that already holds
    files is refused unless `force` (then the files the build writes are replaced; any other file
    is kept and named).
    """
    source, out = Path(source), Path(out)
    if not (source / "commoncore_gutenberg/manifest.tsv").is_file():
        raise FileNotFoundError(
            f"{source} does not look like the real data folder (no commoncore_gutenberg/)"
        )
    clear = load_clear_excerpts(source)

    def steps(staging: Path, log: BuildLog) -> list[tuple[str, Callable[[], object]]]:
        return [
            ("aoa", lambda: build_aoa(source, staging, log)),
            ("standards", lambda: build_standards(source, staging, log)),
            ("clear", lambda: build_clear(clear, staging, log)),
            ("commoncoretext_pd", lambda: build_commoncoretext(source, staging, log, clear)),
            ("demo_corpus", lambda: build_demo(source, staging, log, clear)),
            ("graded_informational", lambda: build_graded_informational(source, staging, log)),
            ("judge_labels", lambda: build_judge_labels(source, staging, log)),
            ("k5_rewrites", lambda: build_k5_rewrites(source, staging, log)),
            ("gsm8k", lambda: build_gsm8k(source, staging, log)),
            ("mathcamps", lambda: build_mathcamps(source, staging, log)),
            ("onestopenglish", lambda: build_onestop(source, staging, log)),
            ("wordlists", lambda: build_wordlists(source, staging, log)),
            ("authored", lambda: keep_authored(staging, log)),
        ]

    build_staged(out, steps, force)


StepList = Callable[[Path, BuildLog], "list[tuple[str, Callable[[], object]]]"]


def build_staged(out: Path, steps: StepList, force: bool = False) -> list[str]:
    """Run `steps(staging, log)` into a new folder beside `out`, then move what they wrote (with
    README.md and MANIFEST.tsv, last) into `out`. Returns the files of `out` the build did not
    write. Refuses a non-empty `out` without `force`; on any failure `out` is untouched."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise FileExistsError(
            f"--out {out} already holds files: a build writes every dataset anew; pass --force to "
            "replace the files it builds (other files are kept and listed)"
        )
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        log = BuildLog(staging)
        for name, step in steps(staging, log):
            print(f"{name}: {step()}")
        write_text(staging / "README.md", README_MD, log, "littlekit.databuild")
        write_manifest(staging, log.sources)
        for relative in [*sorted(log.sources), MANIFEST]:  # the manifest last: it vouches for the rest
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    stray = sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.name != MANIFEST and p.relative_to(out).as_posix() not in log.sources
    )
    for path in stray:
        print(f"warning: {path} was not written by this build and is not in {MANIFEST}")
    return stray


def keep_authored(out: Path, log: BuildLog, origin: Path = EMBEDDED_DATA) -> dict[str, int]:
    """Record the hand-written folders of AUTHORED in the build, copying them into `out` if needed."""
    counts = {}
    for folder, source in AUTHORED.items():
        if (out / folder).resolve() != (origin / folder).resolve():
            shutil.copytree(origin / folder, out / folder, dirs_exist_ok=True)
        files = sorted(p for p in (out / folder).rglob("*") if p.is_file())
        for path in files:
            log.record(path, source)
        counts[folder] = len(files)
    return counts


def write_manifest(out: Path, sources: dict[str, str]) -> Path:
    """MANIFEST.tsv: one line per built file, sorted by path."""
    lines = ["path\tbytes\tsha256\tsource"]
    for relative in sorted(sources):
        path = out / relative
        lines.append(f"{relative}\t{path.stat().st_size}\t{sha256_file(path)}\t{sources[relative]}")
    manifest = out / MANIFEST
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return manifest


def add_data_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `data build --from SOURCE --out OUT` on a CLI's subparsers."""
    data = subparsers.add_parser("data", help="build the embedded data/ folder from the real data")
    actions = data.add_subparsers(dest="data_command", required=True)
    build = actions.add_parser("build", help="build data/ deterministically from a real-data folder")
    build.add_argument(
        "--from", dest="source", type=Path, required=True, help="the real data (../shared/data)"
    )
    build.add_argument(
        "--out", type=Path, required=True, help="output folder, new or empty (the repository's: data/)"
    )
    build.add_argument(
        "--force",
        action="store_true",
        help="build into an --out that already holds files, replacing the files the build writes",
    )
    return data


def run_data_command(args: argparse.Namespace) -> int:
    if args.data_command == "build":
        build_all(args.source, args.out, force=args.force)
        return 0
    raise ValueError(f"unknown data command {args.data_command!r}")


README_MD = """\
# data/: the embedded default data

Small, licence-clean extracts of public data sets, built by `littlekit data build --from
../shared/data --out data` (code in `littlekit/databuild/`), deterministic: a rebuild gives
byte-identical files. `MANIFEST.tsv` lists every file with its size, SHA-256 and source. Each folder's
`SOURCE.md` gives the source repository and commit, the licence, the attribution and how the files
were derived. Load them with `littlekit.databuild.corpora`.

- `aoa/`: lemma-propagated Kuperman AoA `word,aoa` (the AoA stage's default), Kuperman `Rating.Mean`
  `word,aoa`, the 51,715-word master table, Brysbaert-Biemiller grades (research use; cite the papers).
- `standards/`: CCSS-Math, CCSS-ELA and NGSS standards with grade and band (CCSS public licence;
  NGSS © Achieve, attribution).
- `commoncoretext_pd/`: graded passages (Gutenberg CCSS exemplars, CLEAR, OpenStax) with a
  train/validation split (public domain; CLEAR rows CC BY-NC-SA 4.0; OpenStax rows CC BY 4.0).
- `graded_informational/`: passages of 31 school books labelled K5 / BEYOND / BOUNDARY by their own
  prefaces, whole authors in train or validation, BOUNDARY books held out (public domain); `arc/`: a
  small extract of ARC science-exam question stems with their exam's grade (CC BY-SA 4.0).
- `judge_labels/`: passages of web text, Simple English Wikipedia, children's books and the
  informational books labelled K5 / K8 / K12 / OOS one by one by an LLM judge (the filter's default
  training labels; licence per record, non-commercial records left out).
- `k5_rewrites/`: K-5 versions, written by an LLM, of web passages the judge labelled K8 or K12, each
  paired with its original in `judge_labels/` by `source_id` (training labels only, never validation
  or pretraining text; the original's licence per record).
- `demo_corpus/`: mixed web and graded documents for the filter demos (licence per source).
- `clear/`: the CLEAR corpus excerpts with readability scores (CC BY-NC-SA 4.0).
- `onestopenglish/`: OneStopEnglish texts at three levels (CC BY-SA 4.0).
- `mathcamps/`: MathCAMPS v1 problems (MIT).
- `gsm8k/`: GSM8K train and test (MIT).
- `wordlists/`: the Dolch sight words (public domain).
- `science_clues/`: 165 science trivia clues in Jeopardy's style with NGSS grade labels, written for
  this project (CC BY 4.0); real Jeopardy clues never ship.

The CLEAR-derived files are **non-commercial** (CC BY-NC-SA 4.0): remove `clear/` and the rows with
`source_kind == "clear"` / `source == "clear"` before any commercial use.
"""
