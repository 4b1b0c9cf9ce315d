"""Build the embedded `data/` folder from the real data (`littlekit data build --from ... --out data`).

The build reads only the source folder it is given, writes every file deterministically (two runs
give byte-identical files) and ends with `MANIFEST.tsv` (path, bytes, sha256, source).
"""

from __future__ import annotations

import argparse
import shutil
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


def build_all(source: Path, out: Path) -> None:
    """Build every embedded dataset from `source` (a copy of the shared real data) into `out`."""
    source, out = Path(source), Path(out)
    if not (source / "commoncore_gutenberg/manifest.tsv").is_file():
        raise FileNotFoundError(
            f"{source} does not look like the real data folder (no commoncore_gutenberg/)"
        )
    out.mkdir(parents=True, exist_ok=True)
    log = BuildLog(out)
    clear = load_clear_excerpts(source)
    steps = [
        ("aoa", lambda: build_aoa(source, out, log)),
        ("standards", lambda: build_standards(source, out, log)),
        ("clear", lambda: build_clear(clear, out, log)),
        ("commoncoretext_pd", lambda: build_commoncoretext(source, out, log, clear)),
        ("demo_corpus", lambda: build_demo(source, out, log, clear)),
        ("graded_informational", lambda: build_graded_informational(source, out, log)),
        ("judge_labels", lambda: build_judge_labels(source, out, log)),
        ("k5_rewrites", lambda: build_k5_rewrites(source, out, log)),
        ("gsm8k", lambda: build_gsm8k(source, out, log)),
        ("mathcamps", lambda: build_mathcamps(source, out, log)),
        ("onestopenglish", lambda: build_onestop(source, out, log)),
        ("wordlists", lambda: build_wordlists(source, out, log)),
        ("authored", lambda: keep_authored(out, log)),
    ]
    for name, step in steps:
        print(f"{name}: {step()}")
    write_text(out / "README.md", README_MD, log, "littlekit.databuild")
    write_manifest(out, log.sources)
    stray = sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.name != MANIFEST and p.relative_to(out).as_posix() not in log.sources
    )
    for path in stray:
        print(f"warning: {path} was not written by this build and is not in {MANIFEST}")


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
    build.add_argument("--out", type=Path, default=Path("data"), help="output folder (default: data)")
    return data


def run_data_command(args: argparse.Namespace) -> int:
    if args.data_command == "build":
        build_all(args.source, args.out)
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
