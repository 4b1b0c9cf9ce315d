"""The columns of the data root's tables, as `littlekit.databuild.corpora` returns them.

Apart from the loaders so that a builder can name the columns it writes without importing them:
`corpora.load_arc(path=...)` reads raw ARC files through `littlekit.databuild.informational`.
"""

from __future__ import annotations

AOA_COLUMNS = ("word", "aoa")
AOA_51715_COLUMNS = ("word", "aoa_kup", "aoa_kup_lem", "freq_pm", "perc_known", "nsyll")
STANDARDS_COLUMNS = ("framework", "code", "grade", "band", "subject", "text")
PASSAGE_COLUMNS = (
    "id",
    "text",
    "source",
    "source_kind",
    "genre",
    "label",
    "band",
    "split",
    "n_words",
    "split_group",
)
DEMO_COLUMNS = ("id", "text", "source", "band")
MATHCAMPS_COLUMNS = ("id", "standard", "statement", "answer", "type", "followup_to")
GSM8K_COLUMNS = ("question", "answer")
CLEAR_COLUMNS = (
    "id",
    "text",
    "bt_easiness",
    "lexile_band",
    "lexile_range",
    "band",
    "ambiguous",
    "category",
    "author",
    "title",
    "licence",
)
ONESTOP_COLUMNS = ("id", "level", "text")
INFORMATIONAL_COLUMNS = PASSAGE_COLUMNS + ("pg_id", "label_basis")
INFORMATIONAL_SPLITS = ("train", "validation", "boundary")
ARC_COLUMNS = ("id", "text", "grade", "band", "split", "arc_set", "arc_split", "exam", "year", "n_words")
JUDGE_LABEL_COLUMNS = ("id", "text", "text_sha256", "band", "votes", "judge", "source", "corpus", "licence")
JUDGE_PROVENANCE_COLUMNS = ("origin", "url", "book", "level", "genre", "genre_basis")
K5_REWRITE_COLUMNS = (
    "id", "text", "text_sha256", "band", "source", "form", "source_id", "source_band", "corpus", "licence",
)
K5_REWRITE_PROVENANCE_COLUMNS = ("origin", "url")
