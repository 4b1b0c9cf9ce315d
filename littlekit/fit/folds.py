"""Source groups and source-grouped folds: what the operating point's cross-validation holds out.

`label_groups` gives every training label the source unit it came from, the same units
CommonCoreText-PD's validation split keeps whole, and `grouped_folds` deals whole groups into
folds, so a held-out fold holds only sources its model never saw, as the validation split does.
`tuning_sources` says whose rates set a point.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

import numpy as np
import pandas as pd

DEFAULT_FOLDS = 5
# The label sources that are CommonCoreText-PD's own kinds of text (its train split and CLEAR's
# training author groups): the benchmark's train side, where its validation side is checked.
COMMONCORETEXT_SOURCES = ("source-label:clear", "source-label:gutenberg", "source-label:openstax")
# The label sources whose rates choose a point by default: CommonCoreText-PD's kinds of text and the
# graded_informational school books (K-5 exposition, which no other source holds enough of).
# TinyStories (all K5, trivially kept), MathCAMPS (one-sentence math problems, stage 4's business)
# and ARC (question stems of 10-20 words) train the classifiers but do not set the point.
# With the judge's labels the same kinds are its CommonCoreText-PD train passages and its informational
# school books: graded text like the validation sets, where web text (K-5 about 1.5% of it, and easy
# to tell from the rest) would make a Beyond-K-5 rate look lower than it is on graded text.
GRADED_SOURCES = (
    *COMMONCORETEXT_SOURCES,
    "source-label:informational",
    "source-label:commoncoretext",
    "llm-judge:informational",
)
TUNING_SOURCES = {"graded": GRADED_SOURCES, "commoncoretext": COMMONCORETEXT_SOURCES, "all": None}
# "judge": every LLM-judge-labelled source (the item-graded ARC and MathCAMPS train but do not set
# the point); "auto": "judge" when the labels hold judge labels, else "graded"
TUNING_CHOICES = (*TUNING_SOURCES, "judge", "auto")
JUDGE_PREFIX = "llm-judge:"
# source labels that set the point beside the judge's: passages graded by their text, as the judge grades
TUNED_WITH_JUDGE = ("source-label:commoncoretext",)
INFORMATIONAL_PREFIX = "gi-"  # ids of graded_informational passages (littlekit.databuild.informational)


def tuning_sources(tune_on: str, labels: pd.DataFrame) -> tuple[str, ...] | None:
    """The label sources whose rates set a point (`TUNING_CHOICES`; None: every source)."""
    if tune_on not in TUNING_CHOICES:
        raise ValueError(f"tune_on must be one of {', '.join(TUNING_CHOICES)}, got {tune_on!r}")
    sources = set(labels["source"])
    judged = {s for s in sources if str(s).startswith(JUDGE_PREFIX)}
    if tune_on == "auto":
        tune_on = "judge" if judged else "graded"
    if tune_on == "judge":
        if not judged:
            raise ValueError("tune_on='judge' but the labels hold no LLM-judge labels")
        return tuple(sorted(judged | (sources & set(TUNED_WITH_JUDGE))))
    if TUNING_SOURCES[tune_on] is None:  # "all": every source a rate may be measured on
        from littlekit.fit.labels import REWRITE_PREFIX

        return tuple(sorted(s for s in sources if not str(s).startswith(REWRITE_PREFIX)))
    return TUNING_SOURCES[tune_on]


def label_groups(labels: pd.DataFrame, root: str | os.PathLike | None = None) -> pd.Series:
    """The source unit of each label (index aligned with `labels`), for source-grouped folds.

    CommonCoreText-PD passages take their `split_group` (the unit the train/validation split keeps
    whole: a Gutenberg or CLEAR author, an OpenStax book); other CLEAR excerpts their author group
    (same rule); MathCAMPS problems their CCSS standard; a label with a `group` of its own (judge
    labels: a web site, a children's book) that group; anything else (TinyStories stories) is its
    own group.
    """
    from littlekit.databuild import corpora
    from littlekit.databuild.passages import author_key

    passages = corpora.load_commoncoretext(root)
    by_id = dict(zip(passages["id"], passages["split_group"], strict=True))
    ids = labels["id"].astype(str)
    clear_ids = ids[ids.str.startswith("clear-") & ~ids.isin(by_id)]
    if len(clear_ids):
        clear = corpora.load_clear(root)
        authors = dict(zip("clear-" + clear["id"].astype(int).astype(str), clear["author"], strict=True))
        by_id.update({i: "author:" + author_key(authors.get(i) or "") for i in clear_ids})
    if ids.str.startswith(INFORMATIONAL_PREFIX).any():
        books = corpora.load_graded_informational(root)
        by_id.update(zip(books["id"], "informational:" + books["split_group"], strict=True))
    given = labels["group"] if "group" in labels.columns else pd.Series(None, index=labels.index)
    return pd.Series(
        [
            g if isinstance(g, str) and g else by_id.get(i) or _own_group(i)
            for i, g in zip(ids, given, strict=True)
        ],
        index=labels.index,
        name="group",
    )


def _own_group(label_id: str) -> str:
    if label_id.startswith("mathcamps-"):
        # mathcamps-<standard>-<problem>-<variant>, e.g. mathcamps-4.NF.A.2-0-0
        return "mathcamps:" + label_id.removeprefix("mathcamps-").rsplit("-", 2)[0]
    return "doc:" + label_id


def grouped_folds(
    groups: Sequence[str], bands: Sequence[str], n_folds: int = DEFAULT_FOLDS, seed: int = 0
) -> np.ndarray:
    """A fold number (0..n_folds-1) per document; every group falls whole into one fold.

    Groups are dealt largest first (ties in a seeded order) to the fold holding the fewest
    documents of the group's most common band, then the fewest documents, so each band spreads
    over the folds as evenly as whole groups allow.
    """
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    frame = pd.DataFrame({"group": list(groups), "band": list(bands)})
    if frame["group"].nunique() < n_folds:
        raise ValueError(f"{frame['group'].nunique()} groups cannot fill {n_folds} folds")
    sizes = frame.groupby("group").size()
    main_band = frame.groupby("group")["band"].agg(lambda b: b.value_counts().index[0])
    order = sorted(sizes.index)
    random.Random(f"{seed}:folds").shuffle(order)
    order.sort(key=lambda g: -sizes[g])  # stable: equal sizes stay in the seeded order
    per_band = {band: [0] * n_folds for band in frame["band"].unique()}
    totals = [0] * n_folds
    fold_of: dict[str, int] = {}
    for group in order:
        band = main_band[group]
        fold = min(range(n_folds), key=lambda f: (per_band[band][f], totals[f], f))
        fold_of[group] = fold
        per_band[band][fold] += int(sizes[group])
        totals[fold] += int(sizes[group])
    return frame["group"].map(fold_of).to_numpy()
