"""One table of CCSS-Math, CCSS-ELA and NGSS standards with a school grade and a grade band."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from littlekit.databuild.common import BuildLog, write_csv, write_text
from littlekit.grades import grade_to_band, normalise_grade
from littlekit.text import normalise_whitespace

CCSS_SOURCE = "LessonPlanet/common-core-data-archive@8071a0ec"
NGSS_SOURCE = "Philm013/NGSS-KnowledgeGraph@2e2bd1d4"
ALL_GRADES = "K;01;02;03;04;05;06;07;08;09;10;11;12"
NGSS_SUBJECTS = {"PS": "physical", "LS": "life", "ESS": "earth/space", "ETS": "engineering"}
NGSS_LOWEST_GRADE = {"K-2": "K", "3-5": "3", "MS": "6", "HS": "9"}
_TAG_RE = re.compile(r"<[^>]+>")
_NGSS_DISCIPLINE_RE = re.compile(r"-(PS|LS|ESS|ETS)\d")


def clean_statement(text: str) -> str:
    """Statement text without the archive's HTML tags and entities."""
    return normalise_whitespace(html.unescape(_TAG_RE.sub(" ", str(text))))


def ccss_grade(grades: str) -> tuple[str, str]:
    """(grade, band) from a CCSS grades field such as 'K', '06;07;08', '11-12' or all grades.

    A standard spanning several grades takes its lowest grade. The anchor standards (CCRA) and
    the mathematical practices span K-12; they get grade 'K-12' and band 'ALL'.
    """
    if grades.strip() == ALL_GRADES:
        return "K-12", "ALL"
    lowest = normalise_grade(re.split(r"[;\-]", grades.strip())[0])
    return lowest, grade_to_band(lowest)


def ccss_code(statement_code: str) -> str:
    """'CCSS.Math.Content.K.CC.A.1' -> 'K.CC.A.1', 'CCSS.ELA-Literacy.RL.1.1' -> 'RL.1.1'."""
    return re.sub(r"^CCSS\.(Math\.Content|Math\.Practice|ELA-Literacy)\.", "", statement_code)


def ccss_rows(frame: pd.DataFrame, framework: str, subject: str) -> list[tuple]:
    rows = []
    # rows without a code are placeholders such as "(RL.K.8 not applicable to literature)"
    standards = frame[(frame["level"] == "Standard") & frame["statement_code"].notna()]
    for record in standards.itertuples(index=False):
        grade, band = ccss_grade(record.grades)
        rows.append(
            (
                framework,
                ccss_code(record.statement_code),
                grade,
                band,
                subject,
                clean_statement(record.statement),
            )
        )
    return rows


def ngss_grade(grade_id: str) -> tuple[str, str]:
    """(grade, band) from an NGSS grade id: K..5 as is, K-2/3-5 (ETS) and MS/HS their lowest grade."""
    grade = NGSS_LOWEST_GRADE.get(grade_id, grade_id)
    grade = normalise_grade(grade)
    return grade, grade_to_band(grade)


def ngss_subject(pe_id: str) -> str:
    match = _NGSS_DISCIPLINE_RE.search(pe_id)
    if not match:
        raise ValueError(f"no NGSS discipline in {pe_id!r}")
    return NGSS_SUBJECTS[match.group(1)]


def ngss_rows(frame: pd.DataFrame) -> list[tuple]:
    rows = []
    for record in frame.itertuples(index=False):
        grade, band = ngss_grade(str(record.grade_id))
        rows.append(
            (
                "NGSS",
                record.pe_id,
                grade,
                band,
                ngss_subject(record.pe_id),
                clean_statement(record.description),
            )
        )
    return rows


def build_standards(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    folder = source / "standards"
    math = ccss_rows(pd.read_csv(folder / "ccss_math_flat.csv", dtype=str), "CCSS-Math", "math")
    ela = ccss_rows(pd.read_csv(folder / "ccss_ela-literacy_flat.csv", dtype=str), "CCSS-ELA", "ela")
    ngss = ngss_rows(pd.read_csv(folder / "ngss_performance_expectations_flat.csv", dtype=str))
    rows = math + ela + ngss
    write_csv(
        out / "standards/standards.csv",
        ["framework", "code", "grade", "band", "subject", "text"],
        rows,
        log,
        f"{CCSS_SOURCE}; {NGSS_SOURCE}",
    )
    counts = {
        "math": len(math),
        "ela": len(ela),
        "ngss": len(ngss),
        "all_grades": sum(1 for row in rows if row[3] == "ALL"),
    }
    write_text(out / "standards/SOURCE.md", SOURCE_MD.format(**counts), log, "littlekit.databuild")
    return counts


SOURCE_MD = """\
# standards/: CCSS and NGSS in one table

`standards.csv`: `framework,code,grade,band,subject,text`, one row per standard:
{math} CCSS-Math, {ela} CCSS-ELA and {ngss} NGSS rows.

## How it was made

- CCSS-Math and CCSS-ELA/Literacy: `ccss_math_flat.csv` and `ccss_ela-literacy_flat.csv` from
  LessonPlanet/common-core-data-archive @ 8071a0ec (flattened from the official 2013 XML). Only rows
  with `level == "Standard"` and a code (components such as `K.CC.A` and the 26 placeholder rows
  "(RL.K.8 not applicable to literature)" are left out). `code` drops the
  `CCSS.Math.Content.`, `CCSS.Math.Practice.` and `CCSS.ELA-Literacy.` prefixes, so math codes match
  MathCAMPS (`4.NF.A.2`). HTML tags and entities in the statements are removed.
- `grade` is the lowest grade the standard covers (`06;07;08` -> 6, `11-12` -> 11, `09;10;11;12` ->
  9); `band` is `littlekit.grades.grade_to_band(grade)`. The {all_grades} standards that span every
  grade (the ELA College and Career Readiness anchors `CCRA.*` and the eight mathematical practices
  `MP1`-`MP8`) are kept with grade `K-12` and band `ALL`; filter them out when you need a school band.
- `subject`: `math` or `ela` for CCSS.
- NGSS: `ngss_performance_expectations_flat.csv` from Philm013/NGSS-KnowledgeGraph @ 2e2bd1d4, all
  performance expectations; `text` is the expectation's description (clarification statements and
  assessment boundaries are in the source). `grade` from `grade_id`: K-5 as is, the engineering
  bands `K-2` -> K and `3-5` -> 3, `MS` -> 6, `HS` -> 9; bands K5, K8, K12. `subject` from the
  discipline in the code: PS physical, LS life, ESS earth/space, ETS engineering.

## Licence and attribution

- Common Core State Standards: © Copyright 2010. National Governors Association Center for Best
  Practices and Council of Chief State School Officers. All rights reserved. Used under the CCSS
  public licence, which requires this attribution.
- NGSS: NGSS Lead States. 2013. *Next Generation Science Standards: For States, By States.*
  Washington, DC: The National Academies Press. NGSS is a registered trademark of Achieve. Neither
  Achieve nor the lead states and partners that developed the NGSS were involved in producing this
  table and do not endorse it.
"""
