"""CLEAR corpus: the excerpt table with its derived Lexile range and grade band."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from littlekit.databuild.common import BuildLog, format_float, write_csv, write_text
from littlekit.databuild.lexile import CCSS_LEXILE_RANGES, clear_lexile_range, lexile_label, lexile_to_band

CLEAR_SOURCE = "scrosseye/CLEAR-Corpus@dbf1cf0d CLEAR_corpus_final.xlsx"
CLEAR_COLUMNS = {
    "ID": "id",
    "Author": "author",
    "Title": "title",
    "Anthology": "anthology",
    "URL": "url",
    "Pub Year": "pub_year",
    "Categ": "category",
    "Sub Cat": "sub_category",
    "Location": "location",
    "License": "licence",
    "MPAA Max": "mpaa_max",
    "Lexile Band": "lexile_band",
    "BT_easiness": "bt_easiness",
    "s.e.": "bt_se",
    "Google WC": "google_wc",
    "Flesch-Reading-Ease": "flesch_reading_ease",
    "Flesch-Kincaid-Grade-Level": "flesch_kincaid_grade",
    "Automated Readability Index": "ari",
    "SMOG Readability": "smog",
    "New Dale-Chall Readability Formula": "dale_chall",
    "Excerpt": "text",
}


def clean_cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float):
        return format_float(value)
    return str(value).replace("\r\n", "\n").replace("\r", "\n").strip()


def load_clear_excerpts(source: Path) -> pd.DataFrame:
    """The CLEAR sheet with snake_case columns and the derived lexile_range, band and ambiguous."""
    frame = pd.read_excel(source / "clear/CLEAR_corpus_final.xlsx")
    frame = frame[list(CLEAR_COLUMNS)].rename(columns=CLEAR_COLUMNS)
    frame = frame.sort_values("id", kind="stable").reset_index(drop=True)
    ranges = [clear_lexile_range(value) for value in frame["lexile_band"]]
    mapped = [lexile_to_band(low, high) for low, high in ranges]
    frame.insert(frame.columns.get_loc("lexile_band") + 1, "lexile_range", [lexile_label(*r) for r in ranges])
    frame.insert(frame.columns.get_loc("lexile_range") + 1, "band", [band for band, _ in mapped])
    frame.insert(frame.columns.get_loc("band") + 1, "ambiguous", [amb for _, amb in mapped])
    frame["text"] = [clean_cell(text) for text in frame["text"]]
    return frame


def build_clear(frame: pd.DataFrame, out: Path, log: BuildLog) -> dict[str, int]:
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for name, value in zip(frame.columns, record, strict=True):
            if name in {"id", "google_wc"}:
                cells.append(str(int(value)))
            elif name == "pub_year":
                cells.append("" if value != value else str(int(value)))
            elif name == "ambiguous":
                cells.append("true" if value else "false")
            elif name == "band":
                cells.append(value if isinstance(value, str) else "")
            else:
                cells.append(clean_cell(value))
        rows.append(cells)
    write_csv(out / "clear/clear.csv", list(frame.columns), rows, log, CLEAR_SOURCE)
    table = mapping_table(frame)
    write_text(
        out / "clear/SOURCE.md", SOURCE_MD.format(n=len(frame), mapping=table), log, "littlekit.databuild"
    )
    return {"excerpts": len(frame)}


def mapping_table(frame: pd.DataFrame) -> str:
    """The Lexile mapping as a markdown table, with how many excerpts carry each value."""
    lines = [
        "| CLEAR `Lexile Band` | Lexile range | CCSS grade bands overlapped | band | excerpts |",
        "|---|---|---|---|---|",
    ]
    groups = frame.groupby("lexile_range", sort=False)
    ordered = sorted(groups, key=lambda item: int(item[0].split("L")[0]))
    for label, group in ordered:
        low, high = (int(part.rstrip("L")) for part in label.split("-"))
        raw = ", ".join(sorted({str(v).strip() for v in group["lexile_band"]}, key=len))
        touched = [name for name, (a, b) in CCSS_LEXILE_RANGES.items() if min(high, b) - max(low, a) > 0]
        where = ", ".join(touched) if touched else ("below 2-3" if high < 420 else "above 11-CCR")
        band = group["band"].iloc[0]
        band = band if isinstance(band, str) else "none (ambiguous)"
        lines.append(f"| {raw} | {label} | {where} | {band} | {len(group)} |")
    return "\n".join(lines)


SOURCE_MD = """\
# clear/: the CLEAR corpus (CommonLit Ease of Readability)

`clear.csv`: all {n} excerpts of `CLEAR_corpus_final.xlsx` from scrosseye/CLEAR-Corpus @ dbf1cf0d,
one row each, sorted by `id`.

## Licence and attribution

**CC BY-NC-SA 4.0** (https://creativecommons.org/licenses/by-nc-sa/4.0/): attribution,
non-commercial use only, derivatives under the same licence. This extract (and every passage in
`commoncoretext_pd/` and `demo_corpus/` whose source is CLEAR) is a derivative and carries the same
licence. Per-excerpt licences of the original texts are in the `licence` column (empty = public
domain text, mostly Project Gutenberg).

Crossley, S. A., Heintz, A., Choi, J., Batchelor, J., Karimi, M., & Malatinszky, A. (2023).
A large-scaled corpus for assessing text readability. *Behavior Research Methods*, 55, 491-507.
Crossley, S. A., Heintz, A., Choi, J., Batchelor, J., & Karimi, M. (2021). The CommonLit Ease of
Readability (CLEAR) Corpus. *Proceedings of EDM 2021*.

## Columns

The sheet's columns renamed to snake_case (`ID` -> `id`, `BT_easiness` -> `bt_easiness`, `s.e.`
-> `bt_se`, `Categ` -> `category` (Lit/Info), `Excerpt` -> `text`, ...), keeping author, title, URL,
year, category, licence, MPAA rating, Lexile band, Bradley-Terry easiness, word count and the
readability formulas. Line endings normalised to LF; text otherwise unchanged. Three derived
columns:

- `lexile_range`: the Lexile range the `lexile_band` value stands for. CLEAR mostly stores a band's
  centre (500, 700, ...); 24 rows spell the range (`410L-600L`). Centre N is read as
  (N-90)L-(N+100)L: centre 500 and the `410L-600L` rows have the same mean Flesch-Kincaid grade
  (3.2 vs 3.3), as do 700 and `610L-800L` (5.3 vs 5.0). This reading is ours, not CLEAR's.
- `band`, `ambiguous`: the grade band from the CCSS Appendix A Lexile ranges (2-3: 420-820L, 4-5:
  740-1010L, 6-8: 925-1185L, 9-10: 1050-1335L, 11-CCR: 1185-1385L), merged per band (K5 = up to
  1010L, K8 = 925-1185L, K12 = from 1050L; below 420L counts as K5 and above 1385L as K12, since
  CLEAR excerpts were all chosen for grades 3-12). A range takes the band it overlaps most; a range
  that overlaps K5 and a Beyond-K-5 band is ambiguous (empty band, `ambiguous=true`).

{mapping}
"""
