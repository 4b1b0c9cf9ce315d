"""Training labels for the grade classifiers: an LLM judge's passage labels, or grade-labelled sources.

`build_labels(spec)` makes the labels a fit trains on; `spec` is a comma-separated list of label
sets, each `judge` (the default), `source`, or a path to a judge-format file whose records carry
their text:

- `judge` (`build_judge_labels`): the data root's `judge_labels/labels.jsonl`, passages of web
  text, Simple English Wikipedia, children's books and the informational school books that an
  LLM judge labelled one by one with the paper's four bands (the paper trains its classifiers on
  such labels), plus the graded sets the judge did not label: ARC question stems by their exam's
  grade and MathCAMPS problems by their standard's grade (`ITEM_MAX_PER_BAND` each), and every
  CommonCoreText-PD train passage by its band (`source-label:commoncoretext`). The judge's
  passages hold no older literature; without these the classifiers kept 10% of the CCSS
  exemplar books' K-5 validation passages.
  Each judge record's source is `llm-judge:<group>` (`JUDGE_GROUPS`: all web crawl text is one
  group, Simple Wikipedia another, each children's platform its own, the informational books
  one), its `corpus` the corpus it came from and its `group` the unit folds keep whole (a web
  site, a children's book; informational passages take their book's split group).
- a path: that judge-format file's records, grouped as above.
- `source` (`build_default_labels`): documents labelled by the grade their source already gives
  them, never by a model (the labels of the project before judge labels existed):

- `source-label:gutenberg`: the CCSS exemplar band of each Gutenberg book
  (CommonCoreText-PD, train split only).
- `source-label:clear`: CLEAR excerpts by their Lexile-derived band (`clear/clear.csv`, the
  CommonCoreText-PD train rows and other excerpts); ambiguous Lexile ranges are skipped.
- `source-label:openstax`: OOS, college textbooks (CommonCoreText-PD, train split only).
- `source-label:tinystories`: K5, stories written for 3-4 year olds (the demo corpus).
- `source-label:mathcamps`: the grade of the problem's CCSS standard (original problems only).
- `source-label:informational`: passages of the graded_informational school books of the train
  split (nature study, science readers, geography, health, history), K5 from their own prefaces;
  a BEYOND book is K12 when its label says secondary / high school / grades 9-12, else K8.
  BOUNDARY books and validation books never enter.
- `source-label:arc`: ARC science-exam question stems of the train split by their school grade.

Every K-5 source but CLEAR, the informational books and ARC is narrative; without informational
K-5 text the classifiers learn genre (stories = K-5, exposition = beyond) instead of grade.
- `source-label:gsm8k`: off by default; `gsm8k_band` (e.g. K8) for GSM8K train questions.

GSM8K is left out by default: it has no per-problem grade, its authors describe it as solvable
by "a bright middle school student" (2-8 steps), so any single band is wrong for a large share of
it, and the K5/K8 boundary is exactly where the classifier's mistakes matter. MathCAMPS already
gives graded math word problems. `gsm8k_band="K8"` adds it as a conservative K8.

The judge's and file label sets leave out everything sharing text with a CommonCoreText-PD or
graded_informational validation passage. The source labels leave out, as they always did, what
shares text with CommonCoreText-PD validation (so `--labels source` gives the labels it gave before;
one Wizard of Oz passage among them shares an 8-word sequence with a graded_informational validation
passage). Nothing is drawn from CommonCoreText-PD validation sources: CLEAR excerpts outside
CommonCoreText-PD are kept only when their author group is a training group, and every candidate
sharing a text or any 8-word sequence with a validation passage is dropped.

Balance: within a band, each source gets an equal share of `max_per_band`; a source with fewer
documents passes its unused share to the others (seeded sample of document ids).

Records are the judge's label format (`littlekit.judge`: id, text_sha256, band, votes, judge,
source) plus `text`, `corpus` and `group` fields, so the same reader takes both.
`load_labels(path)` reads either
kind; judge labels, which carry no text, are joined with their documents by `text_sha256`.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from littlekit import config
from littlekit.databuild import corpora
from littlekit.databuild.judge_labels import WEB_CRAWL_CORPORA, WIKI_CORPORA
from littlekit.grades import BANDS, grade_to_band
from littlekit.judge.labels import make_label, read_labels, text_sha256, write_labels
from littlekit.text import shingles

log = logging.getLogger("littlekit.fit.labels")

SOURCE_PREFIX = "source-label:"
JUDGE_PREFIX = "llm-judge:"
LABEL_COLUMNS = ("id", "text_sha256", "band", "votes", "judge", "source", "text", "corpus", "group")
JUDGE_LABELS_FILE = "judge_labels/labels.jsonl.gz"
LABEL_SETS = ("judge", "rewrites", "source")
DEFAULT_LABELS = "judge,rewrites"
# K-5 rewrites of judge-labelled web passages (`build_rewrite_labels`): written text, so they train
# the classifiers and are never a label a rate, a point or a held-out figure is measured on
REWRITE_PREFIX = "llm-rewrite:"
# The judge's corpora by the group a label's source names (the kind of text the every-kind rule
# and leave-one-corpus-out checks treat as one): crawl text is one kind whichever crawl it came
# from; Simple English Wikipedia (edited, simplified encyclopedia text) another; each children's
# platform and the informational school books their own.
JUDGE_GROUPS: dict[str, str] = {
    **{corpus: "web" for corpus in WEB_CRAWL_CORPORA},
    **{corpus: "simplewiki" for corpus in WIKI_CORPORA},
    "graded_informational": "informational",
}
# The judge sources that are web text a FineWeb-Edu run meets (crawl text and the wikis)
WEB_SOURCES = (JUDGE_PREFIX + "web", JUDGE_PREFIX + "simplewiki")
ITEM_MAX_PER_BAND = 300
# The judge set's CommonCoreText-PD train passages: prose graded by its text (CCSS exemplar band,
# CLEAR's Lexile), the judgement the judge makes, so unlike the ARC and MathCAMPS items it also
# sets the operating point (`littlekit.fit.operating_point.tuning_sources`)
COMMONCORETEXT_ITEMS = "commoncoretext"
DEFAULT_MAX_PER_BAND = 1600


def build_default_labels(
    root: str | os.PathLike | None = None,
    seed: int = 0,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
    gsm8k_band: str | None = None,
) -> pd.DataFrame:
    """Labels for the embedded default from the grade-labelled sources under the data root.

    Returns a DataFrame with LABEL_COLUMNS, one row per document, sorted by band then id.
    """
    if gsm8k_band is not None and gsm8k_band not in BANDS:
        raise ValueError(f"gsm8k_band must be one of {', '.join(BANDS)} or None, got {gsm8k_band!r}")
    passages = corpora.load_commoncoretext(root)
    train = passages[passages["split"] == "train"]
    validation = passages[passages["split"] == "validation"]
    candidates = pd.concat(
        [
            _commoncoretext_rows(train),
            _extra_clear_rows(corpora.load_clear(root), passages),
            _tinystories_rows(corpora.load_demo_corpus(root)),
            _mathcamps_rows(corpora.load_mathcamps(root)),
            _informational_rows(corpora.load_graded_informational(root, split="train")),
            _arc_rows(corpora.load_arc(root, split="train")),
            _gsm8k_rows(corpora.load_gsm8k("train", root), gsm8k_band),
        ],
        ignore_index=True,
    )
    # CommonCoreText-PD validation only, as before judge labels existed, so `--labels source`
    # reproduces the earlier labels exactly (see the module docstring on graded_informational)
    candidates = _drop_validation_overlap(candidates, validation["text"])
    chosen = balance(candidates, max_per_band, seed)
    records = [
        {
            **make_label(row.id, row.text, row.band, row.source),
            "text": row.text,
            "corpus": _source_corpus(row.source),
        }
        for row in chosen.itertuples(index=False)
    ]
    frame = pd.DataFrame(records, columns=list(LABEL_COLUMNS))
    return _label_frame(frame.sort_values(["band", "id"], key=_band_then_id).reset_index(drop=True))


def build_labels(
    spec: str = DEFAULT_LABELS,
    root: str | os.PathLike | None = None,
    seed: int = 0,
    max_per_band: int = DEFAULT_MAX_PER_BAND,
    sample_per_band: int | None = None,
) -> pd.DataFrame:
    """The labels a fit trains on, from a comma-separated list of label sets (`judge`, `source`,
    or judge-format files with text; see the module docstring), with ids and texts unique across
    the sets and nothing sharing text with a validation passage. `max_per_band`: the `source`
    set's balance. `sample_per_band`: at most that many labels per band in all, shared among the
    sources as `balance` shares them (a quick run; None: every label)."""
    parts = [part.strip() for part in str(spec).split(",") if part.strip()]
    if not parts:
        raise ValueError(f"no label set named in {spec!r}: give {' or '.join(LABEL_SETS)} or label files")
    frames = []
    for part in parts:
        if part == "judge":
            frames.append(build_judge_labels(root, seed=seed))
        elif part == "rewrites":
            frames.append(build_rewrite_labels(root))
        elif part == "source":
            frames.append(build_default_labels(root, seed=seed, max_per_band=max_per_band))
        else:
            frames.append(_judge_file_rows(Path(part).expanduser(), root))
    labels = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    labels = labels.drop_duplicates("text_sha256").reset_index(drop=True)
    clash = labels["id"][labels["id"].duplicated()]
    if len(clash):
        raise ValueError(
            f"label sets {spec!r} use the same ids for different texts: {sorted(set(clash))[:5]}"
        )
    if len(frames) > 1:
        labels = _drop_validation_overlap(labels, validation_texts(root))
    if sample_per_band is not None:
        labels = balance(labels, sample_per_band, seed)
    return _label_frame(labels.sort_values(["band", "id"], key=_band_then_id).reset_index(drop=True))


def build_judge_labels(
    root: str | os.PathLike | None = None,
    seed: int = 0,
    files: Iterable[str | os.PathLike] | None = None,
    item_max_per_band: int = ITEM_MAX_PER_BAND,
) -> pd.DataFrame:
    """The judge's labels (`files`, default the data root's `judge_labels/labels.jsonl`), the
    item-graded ARC and MathCAMPS labels (at most `item_max_per_band` per band each) and the
    CommonCoreText-PD train passages, minus anything sharing text with a CommonCoreText-PD or
    graded_informational validation passage.

    Returns LABEL_COLUMNS sorted by band then id.
    """
    paths = [Path(f) for f in files] if files is not None else [config.data_path(JUDGE_LABELS_FILE, root)]
    judged = [_judge_file_rows(path, root, check_overlap=False) for path in paths]
    items = pd.concat(
        [
            _mathcamps_rows(corpora.load_mathcamps(root)),
            _arc_rows(corpora.load_arc(root, split="train")),
        ],
        ignore_index=True,
    )
    items = balance(items, item_max_per_band, seed) if len(items) else items
    # every CommonCoreText-PD train passage (its split keeps validation books and authors apart)
    items = pd.concat([items, _commoncoretext_item_rows(corpora.load_commoncoretext(root, split="train"))])
    item_records = [
        {**make_label(r.id, r.text, r.band, r.source), "text": r.text, "corpus": _source_corpus(r.source)}
        for r in items.itertuples(index=False)
    ]
    frame = pd.concat([*judged, pd.DataFrame(item_records)], ignore_index=True)
    frame = frame.drop_duplicates("text_sha256").reset_index(drop=True)
    frame = _drop_validation_overlap(frame, validation_texts(root))
    return _label_frame(frame.sort_values(["band", "id"], key=_band_then_id).reset_index(drop=True))


def build_rewrite_labels(root: str | os.PathLike | None = None) -> pd.DataFrame:
    """The K-5 rewrites of `k5_rewrites/` as K5 labels, each in its original's fold unit.

    An LLM writer rewrote real web passages the judge labelled K8 or K12 for grade 3-5 readers; the
    original stays in the judge's labels with its band, so a pair holds the topic fixed and varies
    the reading level. A rewrite's `group` is its original's (`_judge_unit` on the original's id and
    url), so source-grouped folds keep the pair on one side; its source is `llm-rewrite:<group>`
    and its corpus its original's, so leaving a corpus out leaves its rewrites out too. Rewrites are
    training labels only (`training_only`): no rate is measured on them. Anything sharing text with
    a validation passage is left out. Returns LABEL_COLUMNS.
    """
    rewrites = corpora.load_k5_rewrites(root)
    records = [
        {
            **make_label(row.id, row.text, "K5", REWRITE_PREFIX + judge_group(str(row.corpus))),
            "text": row.text,
            "corpus": str(row.corpus),
            "group": _judge_unit({"id": row.source_id, "url": row.url}, str(row.corpus)),
        }
        for row in rewrites.itertuples(index=False)
    ]
    frame = pd.DataFrame(records, columns=list(LABEL_COLUMNS))
    return _label_frame(_drop_validation_overlap(frame, validation_texts(root)).reset_index(drop=True))


def training_only(sources: pd.Series) -> pd.Series:
    """Whether each label source trains the classifiers only (the rewrites), never measured on."""
    return sources.astype(str).str.startswith(REWRITE_PREFIX)


def judge_group(corpus: str) -> str:
    """The group a judge corpus belongs to (`JUDGE_GROUPS`; a children's platform is its own)."""
    return JUDGE_GROUPS.get(corpus, corpus)


def _judge_file_rows(path: Path, root: str | os.PathLike | None, check_overlap: bool = True) -> pd.DataFrame:
    """A judge-format file's labelled records (with text) as label rows: source `llm-judge:<group>`,
    their corpus, and the unit folds keep whole."""
    if not path.is_file():
        raise FileNotFoundError(
            f"label file {path} does not exist "
            f"(a label set is {', '.join(LABEL_SETS)} or a judge-format file)"
        )
    records = []
    for number, record in enumerate(read_labels(path), 1):
        if record["band"] is None:
            continue
        text = record.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{path}: label {record['id']!r} (record {number}) carries no text")
        if text_sha256(text) != record["text_sha256"]:
            raise ValueError(
                f"{path}: label {record['id']!r} (record {number}): text does not match text_sha256"
            )
        corpus = str(record.get("corpus") or "judge")
        records.append({
            **{key: record[key] for key in ("id", "text_sha256", "band", "votes", "judge")},
            "source": JUDGE_PREFIX + judge_group(corpus),
            "text": text,
            "corpus": corpus,
            "group": _judge_unit(record, corpus),
        })
    if not records:
        raise ValueError(f"{path} holds no labelled records")
    frame = pd.DataFrame(records, columns=list(LABEL_COLUMNS))
    if check_overlap:
        frame = _drop_validation_overlap(frame, validation_texts(root))
    return frame


def _judge_unit(record: dict, corpus: str) -> str | None:
    """The unit a fold keeps whole: a children's book, a web site; None where `label_groups` knows
    better (informational passages: their book's split group)."""
    if record.get("book"):
        return f"book:{corpus}:{record['book']}"
    if corpus == "graded_informational":
        return None
    url = record.get("url")
    if isinstance(url, str) and "://" in url:
        host = url.split("://", 1)[1].split("/", 1)[0].lower().removeprefix("www.")
        if host:
            return f"site:{host}"
    return f"doc:{record['id']}"


def _source_corpus(source: str) -> str:
    return str(source).removeprefix(SOURCE_PREFIX)


def validation_texts(root: str | os.PathLike | None) -> list[str]:
    """Every validation passage a label must not share text with: CommonCoreText-PD's and
    graded_informational's."""
    passages = corpora.load_commoncoretext(root, split="validation")
    books = corpora.load_graded_informational(root, split="validation")
    return [*passages["text"], *books["text"]]


def write_label_file(labels: pd.DataFrame, path: str | os.PathLike) -> int:
    """Write labels (with their text) in the judge's JSON-lines format; returns the count."""
    records = labels.to_dict(orient="records")
    for record in records:
        record["votes"] = record.get("votes") or {}
        if isinstance(record.get("judge"), float):  # NaN from a frame built without judge info
            record["judge"] = None
        for name in ("band", "corpus", "group"):  # pandas turns None into NaN in a str column
            if _missing(record.get(name)):
                record[name] = None
    return write_labels(records, path)


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def load_labels(
    path: str | os.PathLike, texts: pd.DataFrame | str | os.PathLike | None = None
) -> pd.DataFrame:
    """Labelled documents from a labels file: the embedded default's or the LLM judge's.

    Rows whose band is null (no label, e.g. no unanimous vote) are dropped. A file whose records
    carry `text` needs nothing else. Judge labels carry only `text_sha256`: pass the documents
    as `texts` (a DataFrame or a JSON-lines/Parquet path with a `text` column); labels whose
    document is not among them are dropped with a warning. Returns LABEL_COLUMNS.
    """
    records = read_labels(path)
    frame = pd.DataFrame(records)
    if frame.empty:
        raise ValueError(f"{path} holds no labels")
    frame = frame[frame["band"].notna()].reset_index(drop=True)
    if "text" not in frame.columns or frame["text"].isna().any():
        frame = _join_texts(frame.drop(columns=["text"], errors="ignore"), texts, path)
    bad = [
        doc_id
        for doc_id, text, sha in frame[["id", "text", "text_sha256"]].itertuples(index=False)
        if text_sha256(text) != sha
    ]
    if bad:
        raise ValueError(f"{path}: text does not match text_sha256 for ids {bad[:5]} ({len(bad)} in all)")
    return _label_frame(frame)


def _label_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """LABEL_COLUMNS in order, `corpus` and `group` as objects with None where missing (files
    written before these fields existed get the corpus their source names)."""
    frame = frame.reindex(columns=list(LABEL_COLUMNS))
    for name in ("corpus", "group"):
        frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    if frame["corpus"].isna().any():
        frame["corpus"] = frame["corpus"].fillna(frame["source"].map(_source_corpus))
    return frame


def split_labels(
    labels: pd.DataFrame, holdout_fraction: float = 0.2, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A seeded (train, held-out) split, stratified by band.

    Passages of one book or author can fall on both sides, so held-out figures are optimistic;
    CommonCoreText-PD validation sources are the honest test. Training-only labels (the rewrites)
    are always in train and leave the draw of the others as it was without them.
    """
    if not 0 < holdout_fraction < 1:
        raise ValueError(f"holdout_fraction must be between 0 and 1, got {holdout_fraction}")
    held: list[str] = []
    for band, group in labels[~training_only(labels["source"])].groupby("band", sort=True):
        ids = sorted(group["id"])
        n = round(len(ids) * holdout_fraction)
        held.extend(random.Random(f"{seed}:holdout:{band}").sample(ids, n))
    mask = labels["id"].isin(set(held))
    return labels[~mask].reset_index(drop=True), labels[mask].reset_index(drop=True)


def label_counts(labels: pd.DataFrame) -> pd.DataFrame:
    """Documents per source (rows) and band (columns), with totals."""
    table = pd.crosstab(labels["source"], labels["band"], margins=True, margins_name="total")
    return table.reindex(columns=[b for b in (*BANDS, "total") if b in table.columns])


def balance(candidates: pd.DataFrame, max_per_band: int, seed: int = 0) -> pd.DataFrame:
    """At most `max_per_band` documents per band, shared equally among its sources (water-filling)."""
    if max_per_band < 1:
        raise ValueError(f"max_per_band must be positive, got {max_per_band}")
    kept: list[pd.DataFrame] = []
    for band, in_band in candidates.groupby("band", sort=True):
        sizes = in_band.groupby("source").size().to_dict()
        for source, quota in _shares(sizes, max_per_band).items():
            rows = in_band[in_band["source"] == source]
            ids = sorted(rows["id"])
            picked = set(random.Random(f"{seed}:{band}:{source}").sample(ids, quota))
            kept.append(rows[rows["id"].isin(picked)])
    return pd.concat(kept, ignore_index=True) if kept else candidates.iloc[:0]


def _shares(sizes: dict[str, int], cap: int) -> dict[str, int]:
    """Equal shares of `cap`; what a small source cannot use goes to the larger ones."""
    shares: dict[str, int] = {}
    left, open_sources = cap, sorted(sizes, key=lambda s: (sizes[s], s))
    while open_sources:
        fair = left // len(open_sources)
        source = open_sources[0]
        if sizes[source] <= fair:
            shares[source] = sizes[source]
            left -= sizes[source]
            open_sources.pop(0)
            continue
        # every remaining source has more than its share: split what is left, remainder first-come
        extra = left - fair * len(open_sources)
        for rank, name in enumerate(sorted(open_sources)):
            shares[name] = fair + (1 if rank < extra else 0)
        break
    return shares


def _candidates(ids: Iterable[str], texts: Iterable[str], bands: Iterable[str], source: str) -> pd.DataFrame:
    frame = pd.DataFrame({"id": list(ids), "text": list(texts), "band": list(bands)}, dtype=object)
    frame["source"] = SOURCE_PREFIX + source
    usable = [
        isinstance(text, str) and bool(text.strip()) and band in BANDS
        for text, band in zip(frame["text"], frame["band"], strict=True)
    ]
    return frame[usable].drop_duplicates("text")


def _commoncoretext_rows(train: pd.DataFrame) -> pd.DataFrame:
    frames = [
        _candidates(rows["id"], rows["text"], rows["band"], kind)
        for kind, rows in train.groupby("source_kind", sort=True)
        if kind in {"gutenberg", "clear", "openstax"}
    ]
    return pd.concat(frames, ignore_index=True)


def _commoncoretext_item_rows(train: pd.DataFrame) -> pd.DataFrame:
    """CommonCoreText-PD train passages as one label source, each by its passage's grade band."""
    return _candidates(train["id"], train["text"], train["band"], COMMONCORETEXT_ITEMS)


def _extra_clear_rows(clear: pd.DataFrame, passages: pd.DataFrame) -> pd.DataFrame:
    """CLEAR excerpts not in CommonCoreText-PD whose author group is on the training side."""
    from littlekit.databuild.passages import author_key

    clear = clear[clear["band"].notna() & ~clear["ambiguous"].astype(bool)]
    ids = "clear-" + clear["id"].astype(int).astype(str)
    groups = "author:" + clear["author"].fillna("").map(author_key)
    validation_groups = set(passages.loc[passages["split"] == "validation", "split_group"])
    keep = ~ids.isin(set(passages["id"])) & ~groups.isin(validation_groups)
    return _candidates(ids[keep], clear.loc[keep, "text"], clear.loc[keep, "band"], "clear")


def _tinystories_rows(demo: pd.DataFrame) -> pd.DataFrame:
    rows = demo[demo["source"] == "tinystories"]
    return _candidates("tinystories-" + rows["id"], rows["text"], ["K5"] * len(rows), "tinystories")


def _mathcamps_rows(mathcamps: pd.DataFrame) -> pd.DataFrame:
    rows = mathcamps[mathcamps["type"] == "original-problem"]
    bands = rows["standard"].str.split(".").str[0].map(grade_to_band)
    return _candidates("mathcamps-" + rows["id"], rows["statement"], bands, "mathcamps")


SECONDARY_LABEL = re.compile(r"secondary|high[- ]school|9-12", re.IGNORECASE)


def informational_band(band: str, label: str) -> str:
    """A graded_informational book's label band: K5 stays K5; BEYOND is K12 for a secondary or
    high-school book (by its grade label), else K8; anything else (BOUNDARY) has no band."""
    if band == "K5":
        return "K5"
    if band == "BEYOND":
        return "K12" if SECONDARY_LABEL.search(label or "") else "K8"
    return ""


def _informational_rows(books: pd.DataFrame) -> pd.DataFrame:
    books = books[books["split"] == "train"]
    bands = [informational_band(b, lab) for b, lab in zip(books["band"], books["label"], strict=True)]
    return _candidates(books["id"], books["text"], bands, "informational")


def _arc_rows(arc: pd.DataFrame) -> pd.DataFrame:
    arc = arc[arc["split"] == "train"]
    bands = [grade_to_band(int(g)) for g in arc["grade"]]
    return _candidates("arc-" + arc["id"].astype(str), arc["text"], bands, "arc")


def _gsm8k_rows(gsm8k: pd.DataFrame, band: str | None) -> pd.DataFrame:
    if band is None:
        return _candidates([], [], [], "gsm8k")
    ids = [f"gsm8k-train-{i:05d}" for i in range(len(gsm8k))]
    return _candidates(ids, gsm8k["question"], [band] * len(gsm8k), "gsm8k")


def shares_text(texts: Iterable[str], reference: Iterable[str]) -> list[bool]:
    """For each text: does it equal a reference text or share an 8-word sequence with one?"""
    seen: set[tuple[str, ...]] = set()
    hashes: set[str] = set()
    for text in reference:
        seen |= shingles(text)
        hashes.add(text_sha256(text))
    return [text_sha256(text) in hashes or not shingles(text).isdisjoint(seen) for text in texts]


def _drop_validation_overlap(candidates: pd.DataFrame, validation_texts: Iterable[str]) -> pd.DataFrame:
    overlap = shares_text(candidates["text"], validation_texts)
    dropped = candidates[overlap]
    if len(dropped):
        log.info(
            "dropped %d candidates sharing text with validation passages: %s",
            len(dropped),
            dropped["source"].value_counts().to_dict(),
        )
    return candidates[[not flag for flag in overlap]].reset_index(drop=True)


def _join_texts(
    frame: pd.DataFrame, texts: pd.DataFrame | str | os.PathLike | None, path: str | os.PathLike
) -> pd.DataFrame:
    if texts is None:
        raise ValueError(
            f"{path} has labels without text (judge labels); pass texts= the labelled documents "
            "(a DataFrame or a .jsonl/.parquet file with a 'text' column)"
        )
    documents = _read_texts(texts)
    by_sha = {text_sha256(text): text for text in documents["text"]}
    frame = frame.assign(text=frame["text_sha256"].map(by_sha))
    missing = int(frame["text"].isna().sum())
    if missing == len(frame):
        raise ValueError(f"none of the {len(frame)} labels in {path} matches a text in the given documents")
    if missing:
        log.warning("%d of %d labels in %s have no matching text and are dropped", missing, len(frame), path)
    return frame[frame["text"].notna()].reset_index(drop=True)


def _read_texts(texts: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    if isinstance(texts, pd.DataFrame):
        documents = texts
    elif Path(texts).suffix == ".parquet":
        documents = pd.read_parquet(texts)
    else:
        with Path(texts).open(encoding="utf-8") as handle:
            documents = pd.DataFrame([json.loads(line) for line in handle if line.strip()])
    if "text" not in documents.columns:
        raise ValueError(
            f"the documents for the labels have no 'text' column (columns: {list(documents.columns)})"
        )
    return documents


def _band_then_id(column: pd.Series) -> pd.Series:
    if column.name == "band":
        return column.map({band: rank for rank, band in enumerate(BANDS)})
    return column
