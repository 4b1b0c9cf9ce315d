"""Validating the whole cascade on grade-labelled passages: the paper's Figure 2, Table 4, its
n-gram leakage audit (Appendix A.6) and examples of dropped documents (Appendix A.7).

- `littlekit.filter.cascade.cascade_outcomes` runs a Cascade over a frame of passages and keeps,
  per passage, where it left the cascade (the stage and reason) next to the frame's own columns.
- `retention_table` turns that into Figure 2: after each stage (and before any, "raw"), how many
  passages of each group are still in, their share and a Wilson interval. Retention is
  cumulative: a passage counts as retained after stage j when it left at a later stage or was
  kept. `target_check` compares the final shares with the acceptance targets;
  `retention_after_stages` is the same count from a frame of outcomes' status and stage.
- `retained_vs_removed` is Table 4: word counts, sentence length and long words of the K-5
  passages the cascade kept against those it removed.
- `standards_terms` extracts grade-6+ multi-word terms from CCSS/NGSS text by fixed rules (see
  its docstring); `term_hits` finds them in passages; `leakage_table` is the audit's hit rate.
- `dropped_examples`: the first passages (input order) each stage dropped, per reason.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence

import numpy as np
import pandas as pd

from littlekit import paper
from littlekit.filter.cascade import DROPPED, ERRORED, KEPT
from littlekit.filter.registry import stage_label
from littlekit.fit.thresholds import TARGET_MAX_BEYOND, TARGET_MIN_K5  # the acceptance targets
from littlekit.readability import LONG_WORD_CHARS, long_word_share, mean_sentence_length
from littlekit.stats import wilson_interval
from littlekit.text import word_tokens

RAW = "raw"
INPUT = "input"  # the row of a retention_after_stages table before any stage


def figure2_label(stage: str) -> str:
    """A stage's name in figures (Figure 2's: "AoA+Zipf", "FastText", ...), from its declaration;
    "Raw" for the row before any stage."""
    return "Raw" if stage == RAW else stage_label(stage)


# The paper's final retention (Figure 2 and Sec. 3.1.6 / A.6); it prints no per-stage numbers.
PAPER_FINAL_RETENTION: dict[str, dict[str, float]] = {
    name: {
        "K-5": paper.number(f"{key}_k5_kept").value,
        "Beyond K-5": paper.number(f"{key}_beyond_kept").value,
    }
    for name, key in (("CommonCoreText", "cct"), ("WeeBit", "weebit"))
}

TABLE4_ROWS: tuple[str, ...] = (
    "Word count (median)",
    "Word count (mean)",
    "Avg. sentence length (words)",
    f"Long words (>={LONG_WORD_CHARS} chars)",
)
TABLE4_NUMBERS = ("median_words", "mean_words", "sentence_words", "long_words")  # littlekit.paper's
PAPER_TABLE4 = pd.DataFrame(
    {
        side.title(): [paper.number(f"{side}_{name}").value for name in TABLE4_NUMBERS]
        for side in ("retained", "removed")
    },
    index=pd.Index(TABLE4_ROWS, name="statistic"),
)
PAPER_N_TERMS = int(paper.number("ngram_terms").value)
PAPER_TERM_HIT_RATE = paper.number("ngram_hit_rate").value  # retained passages holding one of the terms

# --- running the cascade ------------------------------------------------------------------------


# --- Figure 2 -----------------------------------------------------------------------------------


def retention_table(
    outcomes: pd.DataFrame, stages: Sequence[str], by: str | list[str] = "group", confidence: float = 0.95
) -> pd.DataFrame:
    """Cumulative retention after each stage, per group of `by` (Figure 2).

    One row per (stage, group): `stage` ("raw" first, then `stages` in cascade order), `label`
    (the paper's name for it), `position` (0 = raw), the group column(s), `n` (passages in the
    group), `retained` (still in after that stage), `share` and its Wilson interval.
    """
    keys = [by] if isinstance(by, str) else list(by)
    parts = []
    for position, stage in enumerate([RAW, *stages]):
        # after the stage at `position` (raw = 0), a passage is in when it left later or was kept
        still_in = outcomes.assign(_in=outcomes["exit_index"] >= position)
        counts = still_in.groupby(keys, observed=True, sort=True)["_in"].agg(n="size", retained="sum")
        counts = counts.reset_index().astype({"n": int, "retained": int})
        counts.insert(0, "position", position)
        counts.insert(0, "label", figure2_label(stage))
        counts.insert(0, "stage", stage)
        parts.append(counts)
    table = pd.concat(parts, ignore_index=True)
    table["share"] = table["retained"] / table["n"]
    low, high = wilson_interval(table["retained"].to_numpy(), table["n"].to_numpy(), confidence)
    table["ci_low"], table["ci_high"] = low, high
    return table


def stage_drop_shares(
    outcomes: pd.DataFrame, stages: Sequence[str], stage: str, by: str = "group", confidence: float = 0.95
) -> pd.DataFrame:
    """Per group of `by`: the passages that reach `stage` (every earlier stage kept them), how many
    it drops and that share with its Wilson interval. A stage that removes a smaller share of K-5
    than of Beyond-K-5 passages among those it sees is doing its job; the reverse costs K-5 text."""
    position = list(stages).index(stage)
    reach = outcomes[outcomes["exit_index"] >= position]
    table = reach.groupby(by, observed=True, sort=True)["exit_index"].agg(
        reaching="size", dropped=lambda e: int((e == position).sum())
    )
    table = table.astype(int)
    table["drop_share"] = table["dropped"] / table["reaching"]
    low, high = wilson_interval(table["dropped"].to_numpy(), table["reaching"].to_numpy(), confidence)
    table["ci_low"], table["ci_high"] = low, high
    return table


def retention_wide(table: pd.DataFrame, by: str = "group", value: str = "share") -> pd.DataFrame:
    """`retention_table` as one row per stage (paper's label) and one column per group."""
    wide = table.pivot(index=["position", "label"], columns=by, values=value)
    return wide.droplevel("position").rename_axis(index="stage", columns=None)


def target_check(
    table: pd.DataFrame,
    by: str = "group",
    min_k5: float = TARGET_MIN_K5,
    max_beyond: float = TARGET_MAX_BEYOND,
) -> pd.DataFrame:
    """The final stage's K-5 and Beyond-K-5 retention against the targets, with a `holds` column."""
    final = table[table["position"] == table["position"].max()].set_index(by)
    targets = {"K-5": (">=", min_k5), "Beyond K-5": ("<=", max_beyond)}
    missing = [group for group in targets if group not in final.index]
    if missing:
        raise ValueError(f"no {', '.join(missing)} passages in the table; cannot check the targets")
    rows = []
    for group, (op, target) in targets.items():
        share = float(final.loc[group, "share"])
        holds = share >= target if op == ">=" else share <= target
        rows.append(
            {
                "group": group,
                "retained": int(final.loc[group, "retained"]),
                "n": int(final.loc[group, "n"]),
                "share": share,
                "ci_low": float(final.loc[group, "ci_low"]),
                "ci_high": float(final.loc[group, "ci_high"]),
                "target": f"{op} {target:.0%}",
                "holds": bool(holds),
            }
        )
    return pd.DataFrame(rows).set_index("group")


# --- Table 4 ------------------------------------------------------------------------------------


def whitespace_words(text: str) -> int:
    """Words as a reader counts them: whitespace-separated pieces (the passages' `n_words`)."""
    return len(text.split())


def retained_vs_removed(texts: Iterable[str], kept: Iterable[bool]) -> pd.DataFrame:
    """Table 4: per statistic (rows, `TABLE4_ROWS`), its value over retained and removed texts.

    Word count: whitespace words, median and mean over texts. Sentence length: mean over texts of
    each text's mean words per sentence (littlekit.readability.mean_sentence_length). Long words:
    mean over texts of each text's share of word tokens with >= 7 letters (long_word_share). A row
    `n` gives the number of texts on each side; a side without texts is NaN.
    """
    frame = pd.DataFrame({"text": list(texts), "kept": list(kept)})
    if frame["kept"].isna().any():
        raise ValueError("kept has missing values")
    frame["words"] = frame["text"].map(whitespace_words)
    frame["sentence_length"] = frame["text"].map(mean_sentence_length)
    frame["long_words"] = frame["text"].map(long_word_share)
    columns = {}
    for name, side in (
        ("Retained", frame[frame["kept"].astype(bool)]),
        ("Removed", frame[~frame["kept"].astype(bool)]),
    ):
        columns[name] = [
            side["words"].median(),
            side["words"].mean(),
            side["sentence_length"].mean(),
            side["long_words"].mean(),
            float(len(side)),
        ]
    return pd.DataFrame(columns, index=pd.Index([*TABLE4_ROWS, "n"], name="statistic"))


# --- the n-gram leakage audit -------------------------------------------------------------------

# Function words: a term may not start or end with one, nor hold one inside except "of".
STOP_WORDS = frozenset(
    """
    a an the and or but nor of in on at to for from by with as into onto upon over under about
    above below between among through during before after within without across against along
    around than then that this these those it its is are was were be been being has have had do
    does did can could may might must shall should will would not no so such their them they there
    which who whom whose what when where why how whether while all any both each either every few
    many more most much other others same some one two three own also eg ie etc use using used
    including include includes well very just only up out see grade grades ccr
    """.split()
)
SKILL_STRANDS = frozenset({"W", "WHST", "SL"})  # CCSS-ELA writing and speaking strands
_PUNCTUATION = re.compile(r"[^\w\s'’-]+")  # terms never run across punctuation
COMMON_ZIPF = 5.0  # a term needs one word rarer than this (Zipf 5: ~1 in 10,000 English words)
UPPER_GRADES = frozenset(str(g) for g in range(6, 13))
LOWER_GRADES = frozenset({"K", "1", "2", "3", "4", "5"})


def _chunks(text: str) -> list[list[str]]:
    """Word tokens (the filter's) of each punctuation-free stretch of a text."""
    return [tokens for part in _PUNCTUATION.split(text) if (tokens := word_tokens(part))]


def _ngrams(text: str, sizes: Sequence[int]) -> set[tuple[str, ...]]:
    return {
        tuple(tokens[i : i + n])
        for tokens in _chunks(text)
        for n in sizes
        for i in range(len(tokens) - n + 1)
    }


def _phrase_like(gram: tuple[str, ...], lead_verbs: Collection[str]) -> bool:
    """The rules a candidate must pass to look like a noun phrase, without a tagger."""
    if gram[0] in STOP_WORDS or gram[-1] in STOP_WORDS:
        return False
    if any(word in STOP_WORDS and word != "of" for word in gram[1:-1]):
        return False
    if gram[0] in lead_verbs or gram[0].endswith("ing"):  # "analyze how ...", "solving real ..."
        return False
    if gram[-1].endswith("ed") or any(word.endswith("ly") for word in gram):  # participles, adverbs
        return False
    if gram[-1].endswith("s") and gram[-1][:-1] in lead_verbs:  # "author develops"
        return False
    return True


def _occurrences(
    text: str, sizes: Sequence[int], lead_verbs: Collection[str]
) -> set[tuple[tuple[str, ...], str | None, str | None]]:
    """(n-gram, word before, word after) for each n-gram of a text; a neighbour that is missing
    (start or end of a stretch), a function word or a lead verb is None: no phrase extends there."""
    found = set()
    for tokens in _chunks(text):
        padded = [None, *(None if t in STOP_WORDS or t in lead_verbs else t for t in tokens), None]
        for n in sizes:
            for i in range(len(tokens) - n + 1):
                found.add((tuple(tokens[i : i + n]), padded[i], padded[i + n + 1]))
    return found


def _cut_off(before: set, after: set) -> bool:
    """True when a phrase is always preceded, or always followed, by the same content word: it is
    then a piece of a longer phrase ("terms of rigid" of "terms of rigid motions")."""
    return (len(before) == 1 and None not in before) or (len(after) == 1 and None not in after)


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


def _zipfs(gram: tuple[str, ...]) -> list[float]:
    """wordfreq Zipf frequencies of a term's content words (its words other than "of")."""
    from littlekit.filter.lexicon import zipf

    return [zipf(word) for word in gram if word not in STOP_WORDS]


def standards_terms(
    standards: pd.DataFrame,
    n_terms: int = PAPER_N_TERMS,
    excluded_words: Collection[str] = (),
    sizes: Sequence[int] = (2, 3),
    skip_strands: Collection[str] = SKILL_STRANDS,
    common_zipf: float = COMMON_ZIPF,
) -> pd.DataFrame:
    """Grade-6+ multi-word terms from CCSS/NGSS statements, by fixed rules (the audit's term list).

    `standards`: columns framework, code, grade, text (littlekit.databuild.corpora.load_standards). Upper
    statements are grades 6-12, lower ones K-5; cross-grade anchors ("K-12") count as neither.
    CCSS-ELA statements of the writing and speaking strands (`skip_strands`) are not mined for
    terms (they name skills, "avoiding plagiarism", not concepts) but still count as lower text.

    A candidate is a run of `sizes` word tokens inside one punctuation-free stretch that
      1. looks like a noun phrase: no function word at either end or inside (except "of"); it does
         not start with a word that starts some standard statement (the imperative verbs,
         "analyze", "determine", ... found from the text) or with an "-ing" word, nor end in
         such a verb + "s" or in "-ed"; no "-ly" word;
      2. never occurs in a K-5 statement, and holds at least one word no K-5 statement uses;
      3. holds at least one word rarer in general English than Zipf `common_zipf` (wordfreq), so
         phrases of everyday words ("united states", "second law") drop out;
      4. shares no word with `excluded_words` (the paper excludes the blocklist's vocabulary).
    Score: the number of distinct grade 6-12 statements holding it; ties go to the rarer phrase
    (lower mean Zipf frequency of its words other than "of"), then alphabetical order. Walking down the
    ranking, a candidate is skipped when it contains a term already taken (it adds no match).
    Before ranking, a candidate always preceded, or always followed, by the same content word in
    the grade 6-12 text is dropped as a cut-off piece of a longer phrase ("terms of rigid").

    Returns the top `n_terms`: term, n_words, statements, mean_zipf, frameworks, example_code.
    """
    frame = standards[standards["grade"].isin(UPPER_GRADES | LOWER_GRADES)]
    lower = frame[frame["grade"].isin(LOWER_GRADES)]
    upper = frame[frame["grade"].isin(UPPER_GRADES)]
    strand = upper["code"].str.split(".").str[0]
    upper = upper[~(upper["framework"].eq("CCSS-ELA") & strand.isin(set(skip_strands)))]
    lead_verbs = {tokens[0] for text in frame["text"] if (tokens := word_tokens(text))} - STOP_WORDS
    lower_grams = set().union(*(_ngrams(text, sizes) for text in lower["text"]))
    lower_words = {word for text in lower["text"] for word in word_tokens(text)}
    excluded = set(excluded_words)

    statements: Counter[tuple[str, ...]] = Counter()
    frameworks: dict[tuple[str, ...], set[str]] = defaultdict(set)
    first_code: dict[tuple[str, ...], str] = {}
    neighbours: dict[tuple[str, ...], tuple[set, set]] = defaultdict(lambda: (set(), set()))
    for framework, code, text in zip(upper["framework"], upper["code"], upper["text"], strict=True):
        for gram, before, after in sorted(_occurrences(text, sizes, lead_verbs), key=str):
            neighbours[gram][0].add(before)
            neighbours[gram][1].add(after)
        for gram in _ngrams(text, sizes):
            if gram in lower_grams or not _phrase_like(gram, lead_verbs):
                continue
            if all(word in lower_words for word in gram) or excluded.intersection(gram):
                continue
            statements[gram] += 1
            frameworks[gram].add(framework)
            first_code.setdefault(gram, code)

    word_zipfs = {gram: _zipfs(gram) for gram in statements}
    statements = Counter(
        {
            gram: n
            for gram, n in statements.items()
            if min(word_zipfs[gram]) < common_zipf and not _cut_off(*neighbours[gram])
        }
    )
    zipfs = {gram: float(np.mean(word_zipfs[gram])) for gram in statements}
    ranked = sorted(statements, key=lambda g: (-statements[g], zipfs[g], " ".join(g)))
    taken: list[tuple[str, ...]] = []
    for gram in ranked:
        if len(taken) == n_terms:
            break
        if any(_contains(gram, t) for t in taken):
            continue
        taken.append(gram)
    return pd.DataFrame(
        {
            "term": [" ".join(g) for g in taken],
            "n_words": [len(g) for g in taken],
            "statements": [statements[g] for g in taken],
            "mean_zipf": [round(zipfs[g], 2) for g in taken],
            "frameworks": [", ".join(sorted(frameworks[g])) for g in taken],
            "example_code": [first_code[g] for g in taken],
        }
    )


def term_hits(texts: Iterable[str], terms: Iterable[str]) -> list[list[str]]:
    """Per text, the terms it holds (sorted), matched on the filter's word tokens within
    punctuation-free stretches, so "kinetic energy" matches "Kinetic  energy" but not
    "kinetic. Energy"."""
    wanted = {tuple(term.split()) for term in terms}
    if not wanted:
        return [[] for _ in texts]
    sizes = sorted({len(gram) for gram in wanted})
    return [sorted(" ".join(g) for g in _ngrams(text, sizes) & wanted) for text in texts]


def leakage_table(
    outcomes: pd.DataFrame,
    terms: Iterable[str],
    by: str = "kept",
    text_column: str = "text",
    levels: Sequence | None = None,
) -> pd.DataFrame:
    """Per group of `by` (default retained vs removed): passages, passages holding a term, the
    share with its Wilson interval, and the terms found with their counts. `levels` lists the
    groups to report, in order, including any without passages (n 0, share NaN); default: the
    groups present, sorted."""
    frame = outcomes[[by, text_column]].copy()
    frame["terms"] = term_hits(frame[text_column], terms)
    frame["hit"] = frame["terms"].map(bool)
    groups = dict(list(frame.groupby(by, observed=True, sort=True)))
    rows = []
    for key in groups if levels is None else levels:
        group = groups.get(key, frame.iloc[0:0])
        counts = Counter(term for found in group["terms"] for term in found)
        hits = int(group["hit"].sum())
        low, high = wilson_interval(hits, len(group))
        rows.append(
            {
                by: key,
                "n": len(group),
                "with_term": hits,
                "share": hits / len(group) if len(group) else np.nan,
                "ci_low": low,
                "ci_high": high,
                "terms_found": ", ".join(f"{t} ({n})" for t, n in counts.most_common()),
            }
        )
    return pd.DataFrame(rows).set_index(by)


# --- Appendix A.7 -------------------------------------------------------------------------------


def dropped_examples(
    outcomes: pd.DataFrame,
    per_reason: int = 1,
    stages: Sequence[str] | None = None,
    columns: Sequence[str] = ("id", "band"),
    chars: int = 300,
    text_column: str = "text",
) -> pd.DataFrame:
    """The first `per_reason` passages (input order) each stage dropped for each reason.

    Rows are in cascade order when `stages` is given (else by stage name), then by reason;
    `excerpt` holds the first `chars` characters with whitespace collapsed.
    """
    dropped = outcomes[outcomes["status"].isin([DROPPED, ERRORED])]
    order = {name: i for i, name in enumerate(stages)} if stages is not None else None
    picked = dropped.groupby(["stage", "reason"], sort=True, dropna=False).head(per_reason)
    picked = picked.assign(_order=picked["stage"].map(order) if order else 0)
    picked = picked.sort_values(["_order", "stage", "reason"], kind="stable")
    excerpt = picked[text_column].str.split().str.join(" ")
    excerpt = excerpt.where(excerpt.str.len() <= chars, excerpt.str.slice(0, chars) + " ...")
    keep = ["stage", "reason", *[c for c in columns if c in picked.columns]]
    return picked[keep].assign(excerpt=excerpt).reset_index(drop=True)


def corpus_outcomes(outcomes: pd.DataFrame, stages: Sequence[str], by: str = "family") -> pd.DataFrame:
    """Per value of `by` (a corpus): documents, how many each stage drops and how many are kept, and,
    where documents carry a band (the judge's, or their source's), how many of the kept ones are
    K-5 (`K5 kept`) out of those with a band (`banded kept`): the precision against that band."""
    dropped = outcomes[~outcomes["kept"].astype(bool)]
    table = pd.DataFrame({"documents": outcomes.groupby(by).size()})
    for stage in stages:
        table[f"dropped at {stage}"] = dropped[dropped["stage"] == stage].groupby(by).size()
    kept = outcomes[outcomes["kept"].astype(bool)]
    table["kept"] = kept.groupby(by).size()
    table["banded kept"] = kept[kept["band"].notna()].groupby(by).size()
    table["K5 kept"] = kept[kept["band"] == "K5"].groupby(by).size()
    table = table.fillna(0).astype(int)
    table["kept share"] = table["kept"] / table["documents"]
    table["precision"] = (table["K5 kept"] / table["banded kept"]).where(table["banded kept"] > 0)
    return table


def stage_reasons(outcomes: pd.DataFrame, by: str = "group") -> pd.DataFrame:
    """Counts of passages per (stage, reason) that left the cascade, one column per group."""
    left = outcomes[~outcomes["kept"]]
    table = (
        left.groupby(["exit_index", "stage", "reason", by], observed=True).size().unstack(by, fill_value=0)
    )
    return table.droplevel("exit_index")


# --- the figure -----------------------------------------------------------------------------------


def plot_retention(
    table: pd.DataFrame,
    ax,
    by: str = "group",
    colors: dict[str, str] | None = None,
    order: Sequence[str] | None = None,
    paper: dict[str, float] | None = None,
):
    """Figure 2's panel: per group of `by`, the share retained after each stage as a line with
    its Wilson band; `paper` ({group: share}) marks the paper's final figures at the last stage
    as hollow diamonds. `table` is a `retention_table`; `colors` maps groups to colours."""
    labels = table.sort_values("position")["label"].unique()
    x = np.arange(len(labels))
    groups = list(order) if order is not None else sorted(table[by].unique())
    for group in groups:
        rows = table[table[by] == group].sort_values("position")
        color = (colors or {}).get(group)
        line = ax.plot(
            x, rows["share"], marker="o", color=color, label=f"{group} (n={int(rows['n'].iloc[0]):,})"
        )[0]
        ax.fill_between(x, rows["ci_low"], rows["ci_high"], color=line.get_color(), alpha=0.15, linewidth=0)
        if paper and group in paper:
            ax.plot(
                [x[-1]],
                [paper[group]],
                marker="D",
                markersize=9,
                markerfacecolor="none",
                markeredgecolor=line.get_color(),
                linestyle="none",
                label=f"{group}, paper: {paper[group]:.0%}",
            )
    ax.set_xticks(x, labels, rotation=30, ha="right")
    ax.set_ylim(-0.02, 1.02)
    ax.yaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
    ax.set_ylabel("retained")
    return ax


def retention_after_stages(
    frame: pd.DataFrame, stages: Sequence[str], group: str, confidence: float = 0.95
) -> pd.DataFrame:
    """Share of each group's documents still kept after each stage (and at the input).

    `frame` has one row per document with `group`, `status` and `stage` (the stage that dropped
    or errored it; None when kept), as `pool_frame` gives it. A document dropped or errored at
    stage i counts as kept after every stage before i. Rows: (after, group) with n, kept, share
    and a Wilson interval; `after` runs "input", then the stages in order. The counting is
    `retention_table`'s (Figure 2); this only adds the exit positions it
    needs and names the rows by stage.
    """
    unknown = set(frame.loc[frame["status"] != KEPT, "stage"].dropna()) - set(stages)
    if unknown:
        raise ValueError(f"documents left at stages {sorted(unknown)} not among {list(stages)}")
    position = {name: i for i, name in enumerate(stages)}
    # the index of the first stage a document did not pass; len(stages) for kept documents, and
    # 0 for a record that errored before any stage (it counts at the input, never after stage 1)
    exits = frame.assign(
        exit_index=[
            len(stages) if status == KEPT else position.get(stage, 0)
            for status, stage in zip(frame["status"], frame["stage"], strict=True)
        ]
    )
    table = retention_table(exits, stages, by=group, confidence=confidence)
    table = table.rename(columns={"stage": "after", "retained": "kept"}).replace({"after": {RAW: INPUT}})
    return table.set_index(["after", group])[["n", "kept", "share", "ci_low", "ci_high"]]


# --- the trade-off between K-5 text kept and Beyond-K-5 text let in --------------------------------


def kept_shares(outcomes: pd.DataFrame) -> dict[str, float]:
    """Final K-5 and Beyond-K-5 keep shares (and counts) of a frame with `group` and `kept`."""
    shares = {}
    for group, short in (("K-5", "k5"), ("Beyond K-5", "beyond")):
        rows = outcomes["group"].eq(group)
        shares[f"{short} kept"] = int(outcomes.loc[rows, "kept"].sum())
        shares[f"{short} n"] = int(rows.sum())
        shares[f"{short} share"] = float(outcomes.loc[rows, "kept"].mean()) if rows.any() else float("nan")
    return shares


def tradeoff_points(
    outcomes: dict[str, pd.DataFrame], stages: Sequence[str], points: dict[str, object]
) -> pd.DataFrame:
    """For each set of released-rule outcomes (`cascade_outcomes` with `group` K-5 / Beyond K-5) and
    each operating point: the final K-5 and Beyond-K-5 keep shares, one row per (set, point)."""
    from littlekit.fit.apply_point import apply_operating_point

    rows = [
        {"set": name, "point": label, **kept_shares(apply_operating_point(frame, stages, point))}
        for name, frame in outcomes.items()
        for label, point in points.items()
    ]
    return pd.DataFrame(rows)


def tradeoff_curve(
    outcomes: dict[str, pd.DataFrame], stages: Sequence[str], point: object, grid: Sequence[float]
) -> pd.DataFrame:
    """The curve through `point`: its other settings fixed, fastText's minimum P(K5) swept over
    `grid` (0 = the released rule), one row per (set, minimum) with the final keep shares."""
    from dataclasses import replace

    from littlekit.fit.apply_point import apply_operating_point

    rows = []
    for name, frame in outcomes.items():
        for minimum in grid:
            at = replace(point, fasttext_min_k5_prob=float(minimum) if minimum > 0 else None)
            rows.append({"set": name, "fasttext_min_k5_prob": float(minimum),
                         **kept_shares(apply_operating_point(frame, stages, at))})  # fmt: skip
    return pd.DataFrame(rows)


def web_stream(
    oof_kept: pd.DataFrame, sources: Collection[str], n_docs: float, prior: float | None = None
) -> dict[str, float]:
    """What a point means on a web stream, from training labels scored out of fold (`oof_kept`:
    source, band, kept, as `littlekit.fit.generalisation.out_of_fold_cascade` gives them): the
    judge's K-5 prior among the labels of `sources` (crawl text), the share of its K-5 and of its
    Beyond-K-5 labels kept (with 95% Wilson intervals), the expected judge-K5 share of what is kept
    at that prior, and the documents kept of a stream of `n_docs` documents. The judged passages are
    a sample of crawl text, so the prior and rates are that sample's; `prior` sets another stream's
    K-5 share instead (the rates stay the sample's)."""
    web = oof_kept[oof_kept["source"].isin(set(sources))]
    is_k5 = web["band"].eq("K5").to_numpy()
    kept = web["kept"].astype(bool).to_numpy()
    n_k5, n_beyond = int(is_k5.sum()), int((~is_k5).sum())
    if prior is None:
        prior = n_k5 / len(web) if len(web) else float("nan")
    k5_rate = kept[is_k5].mean() if n_k5 else float("nan")
    beyond_rate = kept[~is_k5].mean() if n_beyond else float("nan")
    kept_share = prior * k5_rate + (1 - prior) * beyond_rate
    nan = (float("nan"), float("nan"))
    k5_low, k5_high = wilson_interval(int(kept[is_k5].sum()), n_k5) if n_k5 else nan
    beyond_low, beyond_high = wilson_interval(int(kept[~is_k5].sum()), n_beyond) if n_beyond else nan
    return {
        "labels": len(web),
        "prior": prior,
        "k5 kept": k5_rate,
        "k5 kept low": k5_low,
        "k5 kept high": k5_high,
        "beyond kept": beyond_rate,
        "beyond kept low": beyond_low,
        "beyond kept high": beyond_high,
        "expected precision": prior * k5_rate / kept_share if kept_share else float("nan"),
        "stream share kept": kept_share,
        "documents kept": kept_share * n_docs,
    }
