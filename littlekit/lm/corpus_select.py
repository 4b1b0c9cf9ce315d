"""The training corpora of the nano models: the embedded documents the filter keeps, and web text.

`pretraining_pool` is every document of the embedded data the pair's text can come from: the demo
corpus and every passage of the LLM judge's labels (web text, Simple Wikipedia, children's books,
informational school books), with a `web` column for the web text among them.

`filter_outcomes` decides, for every document, whether the five-stage filter keeps it, taking the
first of these that is available for the run and saying which (in its note):

1. the validation run's verdicts on the pool (the run product `pool_outcomes`), when they
   cover every document;
2. the same five-stage cascade, built from the run's `artifacts` (all five stages, the
   registry's defaults), run here;
3. when the artifacts are incomplete: stages 1 and 4 only (AoA and symbolic, which need no
   trained model), with the run's AoA table if it has one, else the embedded Kuperman table.

`training_corpora` then gives the two draws of the pair from one pool: the K-5 corpus (the
documents the filter keeps) and the unfiltered corpus (every document of the pool, kept or not:
the paper's LittleCurriculum is what the filter keeps of FineWeb-Edu, and its UNFILTERED reads
FineWeb-Edu itself), both without the documents sharing text with anything a chapter scores a
trained model on (`evaluation_texts`: CommonCoreText-PD validation, CLEAR, the science clues,
MathCAMPS, GSM8K test), so no evaluation is measured on training text. The two differ only
where the filter dropped text; chapter 9 samples the unfiltered corpus to as many tokens as the
K-5 corpus holds. `write_corpus` saves one as jsonl (CORPUS_COLUMNS: id, text, source, band, web, origin,
family); `composition` tabulates corpora per family.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from littlekit import runs
from littlekit.filter.artifacts import (
    artifact_path,
    artifact_problems,
    stage_list,
    stage_options_from_artifacts,
)
from littlekit.io import JsonlWriter
from littlekit.text import overlaps

FALLBACK_STAGES = ("aoa", "symbolic")
# the demo corpus' web text (the rest is graded or child-directed text, math problems, textbooks)
DEMO_WEB_SOURCES = ("dclm", "dolma_cc", "fineweb_edu", "scrapinghub", "wikitext2")
JUDGE_ID_PREFIX = "judge:"
POOL_COLUMNS = ("id", "text", "source", "band", "web", "origin", "family")
VERDICT_COLUMNS = ("status", "stage", "reason", "kept")
CORPUS_COLUMNS = ("id", "text", "source", "band", "web", "origin", "family")


@dataclass
class FilterOutcomes:
    """Every document with its verdict, the stages behind it, and a note on where it came from."""

    frame: pd.DataFrame  # the documents' columns + status, stage, reason, kept
    stages: list[str]
    note: str
    source: str  # "pool_outcomes" (the validation run's verdicts), "cascade" or "fallback"


def pretraining_pool(root: str | os.PathLike | None = None) -> pd.DataFrame:
    """The demo corpus and the judge-labelled passages (ids `judge:<id>`, source their corpus, band
    the judge's), minus passages sharing text with a demo document (the judge read 1,500-character
    cuts of some demo pages). Columns POOL_COLUMNS: `web` marks web text (the demo corpus' crawl,
    news and Wikipedia pages, the judge's crawl and wiki corpora), `origin` the file, `family` the
    demo corpus' data set or the judge's corpus."""
    from littlekit.databuild import corpora
    from littlekit.databuild.judge_labels import WEB_CORPORA

    demo = corpora.load_demo_corpus(root)
    family = demo["source"].str.split(":").str[0]
    demo = demo.assign(web=family.isin(DEMO_WEB_SOURCES), origin="demo corpus", family=family)
    judged = corpora.load_judge_labels(root)
    judged = pd.DataFrame({
        "id": JUDGE_ID_PREFIX + judged["id"].astype(str),
        "text": judged["text"],
        "source": judged["corpus"],
        "band": judged["band"],
        "web": judged["corpus"].isin(WEB_CORPORA),
        "origin": "judge labels",
        "family": judged["corpus"],
    })
    judged = judged[~pd.Series(overlaps(judged["text"], demo["text"]), index=judged.index)]
    pool = pd.concat([demo[list(POOL_COLUMNS)], judged], ignore_index=True)
    return pool.drop_duplicates("text").reset_index(drop=True)


def filter_outcomes(documents: pd.DataFrame, run: str | os.PathLike) -> FilterOutcomes:
    """The filter's verdict on each of `documents` (columns id, text, ...) for this run; see the module."""
    run = Path(run)
    if documents["id"].duplicated().any():
        raise ValueError("documents have duplicate ids")
    reused = _previous_outcomes(documents, run)
    if isinstance(reused, FilterOutcomes):
        return reused
    root = runs.path(run, "artifacts")
    problems = artifact_problems(root, "all")
    if not problems:
        names = stage_list("all")
        frame = _run_cascade(documents, names, stage_options_from_artifacts(root, names))
        chain = " -> ".join(names)
        note = f"{reused} Ran the cascade ({chain}) from {root} on all {len(documents):,} documents."
        return FilterOutcomes(frame, names, note.strip(), "cascade")
    names = list(FALLBACK_STAGES)
    aoa = artifact_path(root, "aoa_table")
    options = {"aoa_table": str(aoa)} if not artifact_problems(root, ["aoa"]) else {}
    frame = _run_cascade(documents, names, options)
    note = (
        f"{reused} The artifacts of the full cascade are missing ({'; '.join(problems)}), so only stages "
        f"1 and 4 ({' -> '.join(names)}) filtered the {len(documents):,} documents, with the AoA table "
        f"{aoa if options else 'embedded in the package (Kuperman)'}. For the five-stage corpus, "
        f"{runs.product('artifacts').made_by} makes its artifacts."
    )
    return FilterOutcomes(frame, names, note.strip(), "fallback")


def _previous_outcomes(documents: pd.DataFrame, run: Path) -> FilterOutcomes | str:
    """The validation run's verdicts when they cover every document, else a sentence saying why not."""
    path = runs.path(run, "pool_outcomes")
    if not path.is_file():
        return runs.missing_note(run, "pool_outcomes") + "."
    previous = pd.read_parquet(path)
    missing = [c for c in ("id", *VERDICT_COLUMNS) if c not in previous.columns]
    if missing:
        return f"{path} lacks column(s) {missing}."
    previous = previous.assign(id=previous["id"].astype(str)).drop_duplicates("id").set_index("id")
    ids = documents["id"].astype(str)
    covered = int(ids.isin(previous.index).sum())
    if covered < len(documents):
        return (
            f"{path} covers {covered:,} of the {len(documents):,} documents "
            f"({runs.product('pool_outcomes').made_by} filters the whole pool by default; "
            "run it on the same data root to reuse it)."
        )
    verdicts = previous.loc[ids, list(VERDICT_COLUMNS)].reset_index(drop=True)
    frame = pd.concat([documents.reset_index(drop=True), verdicts], axis=1)
    stages = [s for s in stage_list("all") if s in set(frame["stage"].dropna())] or stage_list("all")
    note = f"Read the validation run's verdicts on all {len(documents):,} documents from {path}."
    return FilterOutcomes(frame, stages, note, "pool_outcomes")


def _run_cascade(documents: pd.DataFrame, names: Sequence[str], options: dict) -> pd.DataFrame:
    from littlekit.filter.cascade import Cascade, cascade_outcomes
    from littlekit.filter.registry import build_stages

    frame, _ = cascade_outcomes(Cascade(build_stages(names, options)), documents.reset_index(drop=True))
    frame["id"] = frame["id"].astype(str)
    return frame


def evaluation_texts(root: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """{benchmark: texts} of everything a chapter scores a trained model on: the pair's training
    text must hold none of it (`training_corpora`'s held_out)."""
    from littlekit.databuild import corpora

    validation = corpora.load_commoncoretext(root, split="validation")
    return {
        "CommonCoreText-PD validation": validation["text"].tolist(),
        "CLEAR": corpora.load_clear(root)["text"].tolist(),
        "science clues": corpora.load_science_clue_texts(root),
        "MathCAMPS": corpora.load_mathcamps(root)["statement"].tolist(),
        "GSM8K test": corpora.load_gsm8k("test", root)["question"].tolist(),
    }


def training_corpora(
    outcomes: pd.DataFrame, held_out: Iterable[str] = (), n: int = 8
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """(k5, unfiltered, shared): the kept documents, every document (the unfiltered draw's pool),
    and a mask of those left out of both for sharing text with `held_out` (an identical text or a
    run of `n` words)."""
    held_out = list(held_out)
    shared = pd.Series(overlaps(outcomes["text"], held_out, n) if held_out else False, index=outcomes.index)
    usable = outcomes[~shared]
    k5 = usable[usable["kept"]].reset_index(drop=True)
    return k5, usable.reset_index(drop=True), shared


def write_corpus(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Save documents as jsonl with the fields of CORPUS_COLUMNS (those the frame has)."""
    columns = [c for c in CORPUS_COLUMNS if c in frame.columns]
    with JsonlWriter(path) as writer:
        for record in frame[columns].to_dict("records"):
            writer.write({k: (None if _missing(v) else v) for k, v in record.items()})
    return Path(path)


def read_corpus(path: str | os.PathLike) -> pd.DataFrame:
    """A corpus written by write_corpus."""
    with open(path, encoding="utf-8") as handle:
        return pd.DataFrame([json.loads(line) for line in handle if line.strip()])


def _missing(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def composition(
    corpora: Mapping[str, pd.DataFrame], by: Sequence[str] = ("origin", "family")
) -> pd.DataFrame:
    """Per group of `by`, and a last row "total": for each named corpus its documents, MB (UTF-8)
    and, for frames with `matched_splits`' n_tokens and n_readable columns, its tokens and readable
    tokens. Columns (corpus, measure); a group a corpus lacks counts 0."""
    by = list(by)
    parts = {}
    for name, frame in corpora.items():
        measures = {"documents": ("text", "size"), "MB": ("MB", "sum")}
        if "n_tokens" in frame.columns:
            measures["tokens"] = ("n_tokens", "sum")
        if "n_readable" in frame.columns:
            measures["readable tokens"] = ("n_readable", "sum")
        sized = frame.assign(MB=frame["text"].map(lambda t: len(t.encode("utf-8")) / 1e6))
        parts[name] = sized.groupby(by).agg(**measures)
    table = pd.concat(parts, axis=1).fillna(0)
    label = ("total", *[""] * (len(by) - 1))
    total = pd.DataFrame(
        [table.sum()],
        index=pd.MultiIndex.from_tuples([label], names=by) if len(by) > 1 else pd.Index(label, name=by[0]),
    )
    table = pd.concat([table, total])
    return table.astype({c: float if c[1] == "MB" else int for c in table.columns})


def draw_shares(
    draws: Mapping[str, pd.DataFrame], column: str = "n_readable", by: str = "family", min_share: float = 0.02
) -> pd.DataFrame:
    """One row per named frame, one column per value of `by` (largest first in the first frame):
    each group's share of the frame's `column` total. Groups under `min_share` in every frame are
    summed into "other"; each row sums to 1."""
    totals = pd.DataFrame({name: frame.groupby(by)[column].sum() for name, frame in draws.items()}).fillna(0)
    shares = (totals / totals.sum()).T
    shares = shares[shares.iloc[0].sort_values(ascending=False).index]
    small = [c for c in shares.columns if (shares[c] < min_share).all()]
    if small:
        shares = shares.drop(columns=small).assign(other=shares[small].sum(axis=1))
    return shares
