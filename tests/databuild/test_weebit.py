"""`corpora.load_weebit` on the project-written fixture in WeeBit's public CSV shape (no WeeBit text)."""

from __future__ import annotations

import csv
import re

import pandas as pd
import pytest

from littlekit.config import REPO_ROOT
from littlekit.databuild import corpora
from littlekit.databuild.corpora import WeeBitFormatError, load_weebit
from littlekit.grades import BANDS, beyond_label

FIXTURE = REPO_ROOT / "tests/fixtures/weebit/weebit_fixture.csv"


@pytest.fixture(scope="module")
def weebit():
    return load_weebit(FIXTURE)


def write(path, rows, sep=","):
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter=sep, lineterminator="\n").writerows(rows)
    return path


def test_columns_ids_and_counts(weebit):
    assert list(weebit.columns) == list(corpora.WEEBIT_COLUMNS)
    assert weebit["id"].is_unique
    assert len(weebit) == 20
    report = weebit.attrs["report"]
    assert report["rows"] == 25 and report["passages"] == 20
    assert report["by_type"] == {kind: 4 for kind in corpora.WEEBIT_TYPES}
    assert report["sep"] == ","
    # ids are <Type>:<row in the file>, so a passage can be found in the user's file
    assert weebit["id"].iloc[0] == "WRLevel2:1"
    assert (weebit["id"].str.split(":").str[0] == weebit["level"]).all()


def test_bands_and_groups_follow_the_type(weebit):
    bands = weebit.groupby("level")["band"].unique().map(list).to_dict()
    assert bands == {
        "WRLevel2": ["K5"],
        "WRLevel3": ["K5"],
        "WRLevel4": ["K5"],
        "BitKS3": ["K8"],
        "BitGCSE": ["K12"],
    }
    assert set(weebit["band"]) <= set(BANDS)
    assert (weebit["group"] == weebit["band"].map(beyond_label)).all()
    assert weebit["group"].value_counts().to_dict() == {"K-5": 12, "Beyond K-5": 8}
    # the file's Grade is kept as a string, not used for the band
    assert weebit.loc[weebit["level"] == "WRLevel3", "grade"].unique().tolist() == ["3"]
    assert weebit.loc[weebit["level"] == "BitGCSE", "grade"].unique().tolist() == ["GCSE"]


def test_boilerplate_lines_are_dropped(weebit):
    report = weebit.attrs["report"]
    assert report["boilerplate_lines"] == 18 and report["texts_with_boilerplate"] == 15
    text = "\n".join(weebit["text"])
    for piece in (
        "Copyright",
        "All rights reserved",
        "Read more",
        "Click here",
        "Back to top",
        "Next »",
        "Page 1 of 2",
        "www.example.com",
        "Photo:",
        "Print this page",
        "Share this page",
        "(c) 2006",
    ):
        assert piece not in text, piece
    duck = weebit.loc[weebit["id"] == "WRLevel2:2", "text"].item()
    lines = [
        "A duck lives by the pond.",
        "She has four little ducklings.",
        "Every day they swim in a line behind her.",
    ]
    assert duck == "\n".join(lines)
    # the passage lines around the boilerplate stay
    assert "Sam laughs and holds the string tight." in text


def test_patterns_match_whole_lines_only():
    lines = {
        "Copyright 2004 Example Press.": True,
        "Copyright (c) 2004": True,
        "© Example Broadcasting": True,
        "  Read more  ": True,
        "Read more: Summer fun at the park": True,
        "Home | Next »": True,
        "Page 3": True,
        "https://example.com/a": True,
        "Copyright law protects writers.": False,
        "Read more books this summer, the teacher said.": False,
        "Next, the tadpole grows its back legs.": False,
        "Home is where the heart is.": False,
        "A page of the book was torn.": False,
    }
    patterns = [re.compile(p, re.IGNORECASE) for p in corpora.WEEBIT_BOILERPLATE]
    for line, boilerplate in lines.items():
        assert any(p.fullmatch(line.strip()) for p in patterns) == boilerplate, line


def test_boilerplate_is_a_parameter(weebit):
    kept = load_weebit(FIXTURE, boilerplate=())
    report = kept.attrs["report"]
    assert report["boilerplate_lines"] == 0 and report["empty"] == 0
    assert kept["text"].str.contains("All rights reserved").any()
    # with no boilerplate removed, the whitespace-variant copy differs ("Share this page") and stays
    assert report["duplicates"] == 1 and len(kept) == 22
    # strings are matched case-insensitively; a compiled pattern keeps its own flags
    own = load_weebit(FIXTURE, boilerplate=[r"sam .*", re.compile("A duck.*"), re.compile("MIA .*")])
    texts = "\n".join(own["text"])
    assert "Sam has a red kite" not in texts and "A duck lives" not in texts
    assert "Mia plants a seed" in texts and "Copyright 2004" in texts


def test_duplicates_are_dropped_and_counted(weebit):
    report = weebit.attrs["report"]
    assert report["duplicates"] == 2  # an exact repeat and a copy differing in whitespace and boilerplate
    assert report["conflicting"] == 2  # one text under WRLevel4 and BitKS3: both copies dropped
    assert report["empty"] == 1  # a row of nothing but boilerplate
    assert (
        report["rows"] == report["empty"] + report["duplicates"] + report["conflicting"] + report["passages"]
    )
    normalised = weebit["text"].str.split().str.join(" ")
    assert normalised.is_unique
    assert not weebit["text"].str.contains("Rivers carry water").any()
    # the first copy is the one kept
    assert weebit["text"].str.startswith("Sam has a red kite.").sum() == 1
    assert weebit.loc[weebit["text"].str.startswith("Covalent bonds"), "id"].tolist() == ["BitGCSE:17"]
    assert "20 passages" in report["summary"] and "2 duplicates" in report["summary"]


def test_tab_separated_copy_and_extra_columns(tmp_path, weebit):
    with FIXTURE.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    tsv = write(tmp_path / "weebit.tsv", rows, sep="\t")
    from_tsv = load_weebit(tsv)
    assert from_tsv.attrs["report"]["sep"] == "\t"
    assert from_tsv.equals(weebit)
    # a leading unnamed index column (pandas' to_csv) and columns in another order, lower-case names
    shuffled = [["", "type", "text", "grade"]] + [[str(i), r[2], r[0], r[1]] for i, r in enumerate(rows[1:])]
    other = load_weebit(write(tmp_path / "index.csv", shuffled))
    assert other.drop(columns="id").equals(weebit.drop(columns="id"))
    with pytest.raises(ValueError, match="sep"):
        load_weebit(FIXTURE, sep=";")


def test_missing_column_names_the_file_and_line(tmp_path):
    path = write(tmp_path / "bad.csv", [["Text", "Type"], ["A cat sat.", "WRLevel2"]])
    with pytest.raises(WeeBitFormatError, match=r"bad\.csv:line 1: .*lacks column\(s\) \['Grade'\]"):
        load_weebit(path)


def test_unknown_type_names_the_file_line_and_row(tmp_path):
    rows = [
        ["Text", "Grade", "Type"],
        ["A cat sat.\nIt was fat.", "2", "WRLevel2"],
        ["A dog ran.", "5", "WRLevel5"],
    ]
    path = write(tmp_path / "types.csv", rows)
    with pytest.raises(
        WeeBitFormatError, match=r"types\.csv:line 4 \(row 2\): unknown Type 'WRLevel5'.*BitGCSE"
    ):
        load_weebit(path)


def test_wrong_field_count_names_the_line(tmp_path):
    path = tmp_path / "fields.csv"
    path.write_text('Text,Grade,Type\n"A cat sat.",2,WRLevel2\n"A dog ran.",2\n', encoding="utf-8")
    with pytest.raises(WeeBitFormatError, match=r"fields\.csv:line 3 \(row 2\): expected 3 fields, got 2"):
        load_weebit(path)


def test_empty_and_header_only_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(
        WeeBitFormatError, match=r"empty\.csv: empty file, expected a header with Text, Grade, Type"
    ):
        load_weebit(empty)
    header = write(tmp_path / "header.csv", [["Text", "Grade", "Type"]])
    with pytest.raises(WeeBitFormatError, match=r"header\.csv: a header but no rows"):
        load_weebit(header)


def test_missing_file_says_it_is_not_shipped(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"not shipped.*Vajjala & Meurers 2012"):
        load_weebit(tmp_path / "WeeBit.csv")


def test_all_rows_dropped_gives_an_empty_frame_with_the_columns(tmp_path):
    rows = [["Text", "Grade", "Type"], ["Read more", "2", "WRLevel2"], ["Back to top", "6", "BitKS3"]]
    frame = load_weebit(write(tmp_path / "only_boilerplate.csv", rows))
    assert list(frame.columns) == list(corpora.WEEBIT_COLUMNS) and len(frame) == 0
    assert frame.attrs["report"]["empty"] == 2


def test_frame_and_its_report_survive_parquet(tmp_path, weebit):
    # the report travels in attrs as a plain dict, so writing the frame (as chapter 7 does) works
    weebit.to_parquet(tmp_path / "weebit.parquet", index=False)
    assert pd.read_parquet(tmp_path / "weebit.parquet")["id"].tolist() == weebit["id"].tolist()
