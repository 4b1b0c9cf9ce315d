"""What the LLM judge's labels (`judge_labels/` of a data root) are made of and how good they are.

Chapter 2 shows them with these functions: where each corpus came from (`provenance`), how many
passages per corpus and band (`band_counts`, corpora grouped by kind of text: `corpus_order`), the
judge's measured quality with Wilson intervals (`quality_table`, `calibration_confusion`), examples
per band (`examples`), what the data build left out of the released records (`left_out`) and which
records the label builder drops for sharing text with a validation passage
(`shares_validation_text`). The records are `corpora.load_judge_labels`'s frame, the quality
`corpora.load_judge_quality`'s dict.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import pandas as pd

from littlekit.grades import BANDS
from littlekit.stats import wilson_interval

LABEL_PREFIXES = ("source-label:", "llm-judge:")
KIND_ORDER = ("web", "simplewiki", "children's books", "informational")
# quality.json's [hits, total] pairs, in the order and words the chapter shows them
QUALITY_MEASURES: dict[str, str] = {
    "k5_precision": "K-5 precision (called K5, truly K5)",
    "k5_recall": "K-5 recall (truly K5, called K5)",
    "beyond_called_k5": "beyond-K-5 passages called K5",
    "exact_band_agreement_on_repeats": "same band when judged twice",
    "k5_agreement_on_repeats": "same K5 call when judged twice",
}


def short_source(source: str) -> str:
    """A label source without its kind prefix: `llm-judge:web` -> `web`, `source-label:arc` -> `arc`."""
    if source.startswith("llm-rewrite:"):  # a K-5 rewrite of a judged passage: name it apart from the judge's
        return "rewrites:" + source.removeprefix("llm-rewrite:")
    for prefix in LABEL_PREFIXES:
        if source.startswith(prefix):
            return source[len(prefix):]
    return source


def corpus_kind(corpus: str) -> str:
    """The kind of text a judge corpus holds: its label group (`littlekit.fit.labels.judge_group`:
    `web`, `simplewiki`, `informational`), every children's platform (`kids:*`) one kind."""
    from littlekit.fit.labels import judge_group

    return "children's books" if corpus.startswith("kids:") else judge_group(corpus)


def corpus_order(names: Iterable[str]) -> list[str]:
    """Corpus names by kind (`KIND_ORDER`, unknown kinds last), then by name."""
    rank = {kind: i for i, kind in enumerate(KIND_ORDER)}
    return sorted(set(names), key=lambda c: (rank.get(corpus_kind(c), len(rank)), c))


def repository(origin: str | None) -> str | None:
    """The `owner/name` of an origin `owner/name@commit:path` (None for a record without one)."""
    if not isinstance(origin, str) or not origin:
        return None
    return origin.split(":", 1)[0].split("@", 1)[0]


def provenance(records: pd.DataFrame) -> pd.DataFrame:
    """Per corpus: passages, licences with their record counts, and the repositories of the origins."""
    rows = []
    for corpus, group in records.groupby("corpus", sort=True):
        licences = group["licence"].value_counts().sort_index()
        repositories = sorted({r for r in group["origin"].map(repository) if r})
        rows.append({
            "corpus": corpus,
            "passages": len(group),
            "licences": "; ".join(f"{name} ({n:,})" for name, n in licences.items()),
            "repositories": ", ".join(repositories) or "—",
        })
    return pd.DataFrame(rows).set_index("corpus").reindex(corpus_order(records["corpus"]))


def band_counts(records: pd.DataFrame) -> pd.DataFrame:
    """Passages per corpus (rows, in `corpus_order`) and band (columns, in band order), with totals."""
    table = pd.crosstab(records["corpus"], records["band"], margins=True, margins_name="total")
    rows = [*corpus_order(records["corpus"]), "total"]
    return table.reindex(index=rows, columns=[*BANDS, "total"], fill_value=0)


def quality_table(quality: Mapping, confidence: float = 0.95) -> pd.DataFrame:
    """The judge's measured rates (the `QUALITY_MEASURES` in `quality`): hits, n, rate, Wilson interval."""
    rows = []
    for key, label in QUALITY_MEASURES.items():
        if key not in quality:
            continue
        hits, n = (int(x) for x in quality[key])
        low, high = wilson_interval(hits, n, confidence)
        rows.append({"measure": label, "hits": hits, "n": n, "rate": hits / n, "ci_low": low,
                     "ci_high": high})
    return pd.DataFrame(rows).set_index("measure")


def rate_text(row: pd.Series | Mapping) -> str:
    """One row of `quality_table` (at its default 95%) as prose: `0.97 (163/168; 95% CI 0.93-0.99)`."""
    hits, n = int(row["hits"]), int(row["n"])
    return f"{row['rate']:.2f} ({hits}/{n}; 95% CI {row['ci_low']:.2f}-{row['ci_high']:.2f})"


def calibration_confusion(quality: Mapping) -> pd.DataFrame:
    """The calibration confusion matrix: reference band (rows) by the judge's band (columns), counts."""
    table = pd.DataFrame(0, index=list(BANDS), columns=list(BANDS), dtype=int)
    for pair, count in quality["calibration_confusion"].items():
        reference, judged = pair.split("->")
        table.loc[reference, judged] = int(count)
    table.index.name, table.columns.name = "reference band", "judge's band"
    return table


def left_out(records: pd.DataFrame, quality: Mapping) -> pd.DataFrame:
    """Released records (`quality['by_corpus']`) the data build left out, per corpus and band
    (corpora that lost none are not shown)."""
    released = pd.DataFrame(quality["by_corpus"]).T.fillna(0).astype(int)
    here = pd.crosstab(records["corpus"], records["band"])
    gone = released.sub(here.reindex(index=released.index, columns=released.columns, fill_value=0))
    gone = gone.reindex(columns=[b for b in BANDS if b in gone.columns])
    gone = gone[gone.sum(axis=1) > 0].assign(total=lambda f: f.sum(axis=1))
    gone.index.name = "corpus"
    return gone


def validation_texts(root: str | os.PathLike | None = None) -> list[str]:
    """The validation passages no training label may share text with (`littlekit.fit.labels`')."""
    from littlekit.fit.labels import validation_texts as label_validation_texts

    return label_validation_texts(root)


def shares_validation_text(texts: Iterable[str], root: str | os.PathLike | None = None) -> list[bool]:
    """For each text: does it equal a validation passage or share an 8-word sequence with one?
    The rule `littlekit.fit.labels.build_labels` drops training labels by."""
    from littlekit.fit.labels import shares_text

    return shares_text(texts, validation_texts(root))



def shorten(text: str, max_chars: int = 280) -> str:
    """`text` on one line, cut at a word boundary before `max_chars` with ' [...]' when cut."""
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    return flat[:max_chars].rsplit(" ", 1)[0] + " [...]"


def examples(records: pd.DataFrame, per_band: int = 2, seed: int = 0, max_chars: int = 280) -> pd.DataFrame:
    """`per_band` seeded examples of each band, from different corpora where the band has several:
    band, corpus, the judge's grade and evidence note, and the text shortened."""
    rows = []
    for band in BANDS:
        in_band = records[records["band"] == band].sample(frac=1.0, random_state=seed)
        picked = in_band.drop_duplicates("corpus").head(per_band)
        if len(picked) < per_band:  # too few corpora: fill up from the rest
            picked = pd.concat([picked, in_band.drop(picked.index).head(per_band - len(picked))])
        rows += [
            {"band": band, "corpus": r.corpus, "grade": r.judge.get("grade"),
             "evidence": r.judge.get("evidence"), "text": shorten(r.text, max_chars)}
            for r in picked.itertuples(index=False)
        ]
    return pd.DataFrame(rows)


def answer_lines(records: pd.DataFrame) -> list[str]:
    """The answer line the rubric asks for, `id<TAB>band<TAB>grade<TAB>evidence`, rebuilt per record."""
    return [
        f"{r.id}\t{r.band}\t{r.judge.get('grade', '')}\t{r.judge.get('evidence', '')}"
        for r in records.itertuples(index=False)
    ]


def repeat_summary(records: pd.DataFrame) -> dict[str, int]:
    """The passages judged twice: how many, how many got the same band both times, and how many of
    the rest kept the higher of the two bands (the rubric's tie rule)."""
    rank = {band: i for i, band in enumerate(BANDS)}
    twice = [(v["pass_1"], v["pass_2"], b) for v, b in zip(records["votes"], records["band"], strict=True)
             if isinstance(v, dict) and v.get("pass_2")]
    differ = [(a, b, band) for a, b, band in twice if a != b]
    higher = sum(band == max(a, b, key=rank.__getitem__) for a, b, band in differ)
    return {"judged_twice": len(twice), "same_band": len(twice) - len(differ), "different": len(differ),
            "kept_higher": higher}
