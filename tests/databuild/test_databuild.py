"""The data builder on tiny fixtures, and the invariants of the built data/ folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from littlekit.databuild import write_manifest
from littlekit.databuild.aoa import kuperman_table, lemma_table
from littlekit.databuild.chunking import MAX_WORDS, MIN_WORDS, chunk_paragraphs, count_words, spread_sample
from littlekit.databuild.columns import INFORMATIONAL_COLUMNS
from littlekit.databuild.common import BuildLog, rng
from littlekit.databuild.copies import build_wordlists
from littlekit.databuild.gutenberg import (
    book_passages,
    decode_book,
    is_running_text,
    skip_front_matter,
    strip_gutenberg,
)
from littlekit.databuild.lexile import clear_lexile_range, lexile_to_band
from littlekit.databuild.passages import assign_splits, author_key, split_problems
from littlekit.databuild.standards import build_standards, ccss_code, ccss_grade, ngss_grade, ngss_subject
from littlekit.grades import BANDS

DATA = Path(__file__).resolve().parents[2] / "data"

PROSE = (
    "The little rabbit ran down the lane to see his friend the duck, who lived by the pond. "
    "They played in the mud all day and then they went home for tea with bread and jam. "
)


def sentence_block(n_sentences: int) -> str:
    return " ".join(f"Sentence number {i} is here and it is short." for i in range(n_sentences))


# --- Gutenberg: decoding and header stripping -------------------------------------------------


def test_latin1_crlf_book_is_decoded_and_stripped():
    raw = (
        "The Project Gutenberg EBook of The \xc6sop for Children\r\n\r\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK THE \xc6SOP FOR CHILDREN ***\r\n\r\n"
        "The \xc6sop fox said: \u00abno\u00bb to the crow.\r\n\r\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK THE \xc6SOP FOR CHILDREN ***\r\n"
        "Section 1. General Terms of Use\r\n"
    ).encode("latin-1")
    text = decode_book(raw, "iso-8859-1")
    assert "\r" not in text
    body = strip_gutenberg(text)
    assert body == "The Æsop fox said: «no» to the crow."


def test_cp1252_quotes_in_a_latin1_book_survive():
    raw = b"He said \x93hello\x94 and left.\r\n"
    assert decode_book(raw, "iso-8859-1") == "He said \u201chello\u201d and left.\n"


def test_utf8_bom_and_lone_cr_are_removed():
    raw = "\ufeffFirst line\rSecond line\r\n".encode()
    assert decode_book(raw, "utf-8") == "First line\nSecond line\n"


def test_older_small_print_header_and_end_of_etext_footer():
    text = (
        "Project Gutenberg Etext of Macbeth\n\n"
        "**Welcome To The World of Free Plain Vanilla Electronic Texts**\n\n"
        "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n"
        "When shall we three meet again?\n\n"
        "End of Project Gutenberg Etext of Macbeth by Shakespeare\n"
        "more licence text\n"
    )
    assert strip_gutenberg(text) == "When shall we three meet again?"


def test_nested_start_markers_keep_text_after_the_last_one():
    text = (
        "*** START OF THE PROJECT GUTENBERG EBOOK 67098 ***\n\nCredits line\n\n"
        "*** START OF THE PROJECT GUTENBERG EBOOK WINNIE-THE-POOH ***\n\nHere is Edward Bear.\n\n"
        "*** END OF THE PROJECT GUTENBERG EBOOK 67098 ***\n"
    )
    assert strip_gutenberg(text) == "Here is Edward Bear."


def test_text_without_markers_is_kept_whole():
    assert strip_gutenberg("\nA header-stripped file.\n") == "A header-stripped file."


@pytest.mark.parametrize(
    "block",
    [
        "CHAPTER IV.",
        "CHAPTER XXIX. The Pic-nic—Huck on Injun Joe’s Track—The “Revenge” Job—Aid for the Widow",
        "Down the Rabbit-Hole",
        "THE END",
        "DUNCAN, King of Scotland. MALCOLM, his Son. DONALBAIN, his Son. MACBETH, General.",
        "Produced by David Reed and the Online Distributed Proofreading Team.",
        "[30] Reading a variant in the Greek text, as the editors suggest here.",
        " CHAPTER I.     Down the Rabbit-Hole\n CHAPTER II.    The Pool of Tears\n CHAPTER III.   A Race",
        "My Father Meets the Cat          9\nMy Father Runs Away          17\nMy Father Finds the Island 27",
    ],
)
def test_headings_contents_and_boilerplate_are_not_running_text(block):
    assert not is_running_text(block)


@pytest.mark.parametrize(
    "block", ["“No,” said Alice.", PROSE, "When shall we three meet again?\nIn thunder?"]
)
def test_prose_dialogue_and_verse_are_running_text(block):
    assert is_running_text(block)


def test_front_matter_before_the_first_chapter_is_skipped_but_contents_do_not_count():
    text = (
        "CONTENTS\n\n CHAPTER I. The Start\n CHAPTER II. The End\n\n"
        f"PREFACE\n\n{PROSE}\n\nCHAPTER I.\nThe Start\n\n{PROSE}\n\n" + "More story text. " * 200
    )
    body = skip_front_matter(text)
    assert body.startswith("CHAPTER I.\nThe Start")


def test_book_passages_end_to_end_on_a_latin1_crlf_book():
    paragraphs = [f"{PROSE}Caf\xe9 number {i} sold _cakes_.[{i}]" for i in range(12)]
    book = (
        "*** START OF THIS PROJECT GUTENBERG EBOOK TEST ***\r\n\r\nCHAPTER I.\r\n\r\n"
        + "\r\n\r\n".join(paragraphs)
        + "\r\n\r\n[Illustration: A rabbit]\r\n\r\n*** END OF THIS PROJECT GUTENBERG EBOOK TEST ***\r\n"
    ).encode("latin-1")
    passages = book_passages(book, "iso-8859-1")
    assert passages
    for text in passages:
        assert MIN_WORDS <= count_words(text) <= MAX_WORDS
        assert "Café" in text and "\r" not in text
        assert "Gutenberg" not in text and "Illustration" not in text
        assert "_" not in text and "[" not in text and "sold cakes." in text


# --- paragraph chunking ---------------------------------------------------------------------------


def test_chunks_join_short_paragraphs_and_respect_bounds():
    paragraphs = [f"Paragraph {i} has exactly ten words in it, you see." for i in range(50)]
    chunks = chunk_paragraphs(paragraphs)
    assert len(chunks) == 50 // 8  # 8 paragraphs of 10 words reach 80
    for chunk in chunks:
        assert count_words(chunk) == 80
        assert chunk.count("\n\n") == 7


def test_chunks_never_cross_a_break():
    paragraphs = ["word " * 50, None, "word " * 50]
    assert chunk_paragraphs(paragraphs) == []


def test_long_paragraph_is_split_at_sentences_within_bounds():
    long = sentence_block(100)  # 900 words
    chunks = chunk_paragraphs([long])
    assert len(chunks) >= 3
    for chunk in chunks:
        assert MIN_WORDS <= count_words(chunk) <= MAX_WORDS
        assert chunk.endswith(".")
    assert " ".join(chunks).split() == long.split()


def test_short_run_is_dropped_rather_than_exceeding_max():
    chunks = chunk_paragraphs(["word " * 60, sentence_block(28)])  # 60 + 252 words
    assert [count_words(c) for c in chunks] == [252]


def test_spread_sample_is_seeded_and_covers_every_stratum():
    items = list(range(1000))
    first = spread_sample(items, 40, rng("book"))
    assert first == spread_sample(items, 40, rng("book"))
    assert first != spread_sample(items, 40, rng("other book"))
    assert [x // 25 for x in first] == list(range(40))
    assert spread_sample(items[:10], 40, rng("book")) == items[:10]


# --- Lexile mapping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (500, (410, 600)),
        (1100, (1010, 1200)),
        ("410L-600L", (410, 600)),
        ("610L - 800L", (610, 800)),
        ("610L-800", (610, 800)),
    ],
)
def test_clear_lexile_values_become_ranges(value, expected):
    assert clear_lexile_range(value) == expected


@pytest.mark.parametrize(
    ("centre", "band", "ambiguous"),
    [
        (100, "K5", False),
        (300, "K5", False),
        (500, "K5", False),
        (700, "K5", False),
        (900, None, True),  # 810-1000L: grade 4-5 and grade 6-8 ranges
        (1100, "K8", False),  # 1010-1200L: overlaps 6-8 most
        (1300, "K12", False),
        (1900, "K12", False),
    ],
)
def test_lexile_ranges_map_to_bands(centre, band, ambiguous):
    assert lexile_to_band(*clear_lexile_range(centre)) == (band, ambiguous)


# --- standards and AoA ------------------------------------------------------------------------------


def test_ccss_grade_codes_and_ngss_fields():
    assert ccss_grade("K") == ("K", "K5")
    assert ccss_grade("06;07;08") == ("6", "K8")
    assert ccss_grade("11-12") == ("11", "K12")
    assert ccss_grade("K;01;02;03;04;05;06;07;08;09;10;11;12") == ("K-12", "ALL")
    assert ccss_code("CCSS.Math.Content.4.NF.A.2") == "4.NF.A.2"
    assert ccss_code("CCSS.ELA-Literacy.RL.11-12.1") == "RL.11-12.1"
    assert ngss_grade("3-5") == ("3", "K5")
    assert ngss_grade("MS") == ("6", "K8")
    assert ngss_subject("3-5-ETS1-2") == "engineering"
    assert ngss_subject("HS-ESS2-1") == "earth/space"


def test_standards_build_is_byte_identical_twice(tmp_path):
    folder = tmp_path / "src/standards"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {
            "ref_id": ["a", "b", "c"],
            "statement_code": ["CCSS.Math.Content.K.CC.A.1", "CCSS.Math.Content.K.CC.A", None],
            "uri": ["u", "u", "u"],
            "level": ["Standard", "Component", "Standard"],
            "grades": ["K", "K", "K"],
            "parent_ref_id": ["p", "p", "p"],
            "statement": ["<p>Count to 100 &amp; beyond.</p>", "Know number names.", "(not applicable)"],
        }
    ).to_csv(folder / "ccss_math_flat.csv", index=False)
    pd.DataFrame(
        columns=["ref_id", "statement_code", "uri", "level", "grades", "parent_ref_id", "statement"]
    ).to_csv(folder / "ccss_ela-literacy_flat.csv", index=False)
    pd.DataFrame(
        {"pe_id": ["MS-PS3-1"], "grade_id": ["MS"], "description": ["Construct and interpret graphs."]}
    ).to_csv(folder / "ngss_performance_expectations_flat.csv", index=False)
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        build_standards(tmp_path / "src", out, BuildLog(out))
        outputs.append((out / "standards/standards.csv").read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].decode().splitlines() == [
        "framework,code,grade,band,subject,text",
        "CCSS-Math,K.CC.A.1,K,K5,math,Count to 100 & beyond.",
        "NGSS,MS-PS3-1,6,K8,physical,Construct and interpret graphs.",
    ]


def test_kuperman_table_lowercases_drops_na_and_keeps_first():
    frame = pd.DataFrame(
        {"Word": ["Apple", "apple", "null", "bosky"], "Rating.Mean": [4.0, 9.0, 11.53, "NA"]}
    )
    table = kuperman_table(
        frame.assign(**{"Rating.Mean": pd.to_numeric(frame["Rating.Mean"], errors="coerce")})
    )
    assert table.to_dict("records") == [{"word": "apple", "aoa": 4.0}, {"word": "null", "aoa": 11.53}]


def test_lemma_table_takes_aoa_kup_lem_lowercases_and_keeps_null():
    master = pd.DataFrame(
        {
            "word": ["Armageddon", "null", "abacuses", "bosky", "ARMAGEDDON"],
            "aoa_kup": [11.83, 11.53, None, None, 3.0],
            "aoa_kup_lem": [11.83, 11.53, 8.69, None, 3.0],
        }
    )
    assert lemma_table(master).to_dict("records") == [
        {"word": "armageddon", "aoa": 11.83},
        {"word": "null", "aoa": 11.53},
        {"word": "abacuses", "aoa": 8.69},
    ]


def test_dolch_words_are_merged_lowercased_and_manifested(tmp_path):
    folder = tmp_path / "src/wordlists/dolch"
    folder.mkdir(parents=True)
    for name, words in {"pronouns": "I\nhe\n", "verbs": "run\nhe\n"}.items():
        (folder / name).write_text(words)
    for name in ("adjectives", "adverbs", "conjunctions", "nouns", "prepositions"):
        (folder / name).write_text("")
    out = tmp_path / "out"
    log = BuildLog(out)
    build_wordlists(tmp_path / "src", out, log)
    assert (out / "wordlists/dolch.txt").read_text() == "he\ni\nrun\n"
    manifest = write_manifest(out, log.sources).read_text().splitlines()
    assert manifest[0] == "path\tbytes\tsha256\tsource"
    assert {line.split("\t")[0] for line in manifest[1:]} == {"wordlists/SOURCE.md", "wordlists/dolch.txt"}


# --- split -----------------------------------------------------------------------------------------


def test_author_keys_group_translations_and_spellings():
    assert author_key("Aesop (tr. G. F. Townsend)") == author_key("Aesop") == "aesop"
    assert author_key("Louisa M. Alcott.") == author_key("Louisa May Alcott") == "alcott"
    assert author_key("Guy de Maupassant Translated by\nALBERT M. C. McMASTER") == "maupassant"
    assert author_key("By Nathaniel Hawthorne.\n") == "hawthorne"
    assert author_key("Charlotte Brontë") == author_key("Charlotte Bronte")


def test_assign_splits_keeps_groups_whole_and_every_band_in_validation():
    rows = [
        {"source_kind": "gutenberg", "band": band, "split_group": f"{band}-{g}", "split": None}
        for band in BANDS
        for g in range(10)
        for _ in range(5)
    ]
    salt = assign_splits(rows)
    assert salt == assign_splits([dict(r) for r in rows])  # deterministic
    assert split_problems(rows) == []
    for band in BANDS:
        assert any(r["split"] == "validation" for r in rows if r["band"] == band)
    by_group: dict[str, set[str]] = {}
    for row in rows:
        by_group.setdefault(row["split_group"], set()).add(row["split"])
    assert all(len(splits) == 1 for splits in by_group.values())


# --- the built data/ folder ------------------------------------------------------------------------


def read_passages() -> list[dict]:
    with (DATA / "commoncoretext_pd/passages.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_real_passages_split_whole_sources_and_cover_every_band():
    passages = read_passages()
    for key in ("source", "split_group"):
        splits: dict[str, set[str]] = {}
        for row in passages:
            splits.setdefault(row[key], set()).add(row["split"])
        assert all(len(s) == 1 for s in splits.values()), f"a {key} is in both splits"
    bands = {row["band"] for row in passages}
    assert bands == set(BANDS)
    assert {row["band"] for row in passages if row["split"] == "validation"} == bands
    share = sum(row["split"] == "validation" for row in passages) / len(passages)
    assert 0.2 <= share <= 0.4


def test_real_passages_have_the_documented_fields_and_bounds():
    for row in read_passages():
        assert list(row) == [
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
        ]
        assert MIN_WORDS <= row["n_words"] == count_words(row["text"]) <= MAX_WORDS
        assert row["source_kind"] in {"gutenberg", "clear", "openstax"}
        assert "gutenberg" not in row["text"].lower() or row["source_kind"] != "gutenberg"


def test_manifest_matches_the_files_in_data():
    lines = (DATA / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "path\tbytes\tsha256\tsource"
    listed = {}
    for line in lines[1:]:
        path, size, digest, source = line.split("\t")
        listed[path] = (int(size), digest)
        assert source
    on_disk = {
        p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name != "MANIFEST.tsv"
    }
    assert set(listed) == on_disk
    for path, (size, digest) in listed.items():
        data = (DATA / path).read_bytes()
        assert len(data) == size, path
        assert hashlib.sha256(data).hexdigest() == digest, path


def test_every_data_folder_has_a_source_md_and_no_jeopardy():
    folders = [p for p in DATA.iterdir() if p.is_dir()]
    assert folders
    for folder in folders:
        assert (folder / "SOURCE.md").is_file(), folder
    assert not any("jeopardy" in p.as_posix().lower() for p in DATA.rglob("*"))


def test_data_folder_stays_small():
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert total < 40 * 1024 * 1024  # 38 MB with the judge's labels and the K-5 rewrites


def test_a_build_keeps_the_hand_written_folders_and_lists_them(tmp_path):
    from littlekit.databuild import AUTHORED, keep_authored
    from littlekit.databuild.common import BuildLog

    log = BuildLog(tmp_path)
    counts = keep_authored(tmp_path, log)
    for folder, source in AUTHORED.items():
        shipped = sorted(p.relative_to(DATA).as_posix() for p in (DATA / folder).rglob("*") if p.is_file())
        assert counts[folder] == len(shipped) > 0
        assert {path: log.sources[path] for path in shipped} == {path: source for path in shipped}
        assert all((tmp_path / path).read_bytes() == (DATA / path).read_bytes() for path in shipped)


def test_tinystories_are_split_at_their_openers_and_keep_their_case():
    from littlekit.databuild.demo import tinystories_stories

    raw = (
        "the end of a cut story.\n\n"
        "Once upon a time, Tom had a red ball.\n\nHe played all day.\n\n"
        "One day, Sue came by.\n\n"  # no opener: stays with Tom's story
        "Once upon a time, there was a cat.\r\n\r\nThe cat slept.\n"
    )
    assert tinystories_stories(raw) == [
        "Once upon a time, Tom had a red ball.\n\nHe played all day.\n\nOne day, Sue came by.",
        "Once upon a time, there was a cat.\n\nThe cat slept.",
    ]
    assert tinystories_stories("no opener here") == []


def test_the_demo_corpus_tinystories_are_cased():
    from littlekit.databuild import corpora

    stories = corpora.load_demo_corpus().query("source == 'tinystories'")["text"]
    assert len(stories) == 600 and stories.str.startswith("Once upon a time").all()
    assert (stories != stories.str.lower()).all()


# --- graded_informational: school books and ARC stems ----------------------------------------------

INFO = DATA / "graded_informational"
INFO_FIELDS = list(INFORMATIONAL_COLUMNS)
MANIFEST_HEADER = (
    "file\tsource_repo\tcommit\tupstream_path\tlicence\tband\tgrade_or_age\tevidence\tgenre\tencoding\twords"
)
ARC_HEADER = (
    "questionID,originalQuestionID,totalPossiblePoint,AnswerKey,isMultipleChoiceQuestion,includesDiagram,"
    "examName,schoolGrade,year,question,subject,category"
)


def assert_books_on_one_side(rows: list[dict]) -> None:
    """No book (source) and no author (split_group) has passages in both train and validation."""
    for key in ("source", "split_group"):
        sides: dict[str, set[str]] = {}
        for row in rows:
            if row["split"] != "boundary":
                sides.setdefault(row[key], set()).add(row["split"])
        assert all(len(s) == 1 for s in sides.values()), f"a {key} is in train and validation"


def school_book(title: str, author: str, words: list[str]) -> bytes:
    """A Project Gutenberg file: header, a teacher's preface, CHAPTER I, 12 paragraphs, footer."""
    paragraphs = [
        f"The {words[i % 3]} lesson number {i} tells the pupil about the {words[(i + 1) % 3]} and the pond. "
        * 6
        for i in range(12)
    ]
    text = (
        f"The Project Gutenberg EBook of {title}\r\n\r\nAuthor: {author}\r\n\r\n"
        f"*** START OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\r\n\r\nPREFACE\r\n\r\n"
        "To the teacher: this preface is adult text and must never become a passage, so it is cut.\r\n\r\n"
        "CHAPTER I.\r\n\r\n" + "\r\n\r\n".join(paragraphs) + "\r\n\r\n"
        f"*** END OF THIS PROJECT GUTENBERG EBOOK {title.upper()} ***\r\nSection 1. General Terms of Use\r\n"
    )
    return text.encode("ascii")


def arc_csv(rows: list[tuple[str, int, str]], category: str) -> str:
    lines = [ARC_HEADER]
    for qid, grade, question in rows:
        lines.append(f'{qid},{qid},1,A,1,0,TestExam,{grade},2009,"{question}",,{category}')
    return "\n".join(lines) + "\n"


def informational_source(root: Path) -> Path:
    """A tiny real-data folder: 3 K5, 3 BEYOND and 1 BOUNDARY book, the 6 ARC CSVs, a CC licence."""
    folder = root / "graded_informational"
    (folder / "gutenberg").mkdir(parents=True)
    (folder / "arc").mkdir()
    books = [
        ("90001", "K5", "Ann Apple", "cat"),
        ("90002", "K5", "Bob Birch", "dog"),
        ("90003", "K5", "Cal Cedar", "hen"),
        ("90004", "BEYOND", "Dee Dogwood", "nebula"),
        ("90005", "BEYOND", "Eve Elm", "legislature"),
        ("90006", "BEYOND", "Fay Fir", "photosynthesis"),
        ("90007", "BOUNDARY", "Ann Apple", "star"),  # same author as a K5 book
    ]
    lines = [MANIFEST_HEADER]
    for pg_id, band, author, word in books:
        name = f"gutenberg/{pg_id}_book_{word}.txt"
        (folder / name).write_bytes(school_book(f"Book of the {word}", author, [word, "sun", "tree"]))
        evidence = "inferred: by convention" if pg_id == "90006" else f'preface: "for {band} pupils"'
        lines.append(
            f"{name}\tGITenberg/Book_{pg_id}\t{'a' * 40}\t{pg_id}.txt\tpublic domain in the USA\t{band}\t"
            f"grade for {band}\t{evidence}\tinformational (test)\tus-ascii, CRLF\t1000"
        )
    for subset in ("Easy", "Challenge"):
        for part in ("Train", "Dev", "Test"):
            name = f"ARC-{subset}-{part}.csv"
            rows = [
                (
                    f"{subset}{part}_{i}",
                    grade,
                    f"Which {subset} {part} question {i} is at grade {grade} here? (A) one (B) two",
                )
                for i, grade in enumerate((4, 5, 7, 8))
            ]
            rows.append(
                (f"{subset}{part}_dup", 8, "Which planet is the shared duplicate stem? (A) Mars (B) Venus")
            )
            rows.append(
                (f"{subset}{part}_num", 3, f"Numbered {subset} {part} options follow the stem (1) a (2) b")
            )
            rows.append((f"{subset}{part}_short", 6, "Too short (A) yes (B) no"))
            (folder / "arc" / name).write_text(arc_csv(rows, part), encoding="utf-8")
            lines.append(
                f"arc/{name}\tRazvanDu/TemporalRNNs\t{'b' * 40}\tARC-{subset}/{name}\tCC BY-SA 4.0\tITEM\t"
                "schoolGrade per row\tcolumn schoolGrade\tinformational\tutf-8, LF\t100"
            )
    (folder / "manifest.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "onestopenglish").mkdir()
    (root / "onestopenglish/LICENSE.md").write_text("Attribution-ShareAlike 4.0 International\n")
    return root


def built_files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_informational_build_is_byte_identical_and_keeps_books_and_boundary_apart(tmp_path):
    from littlekit.databuild.common import read_jsonl
    from littlekit.databuild.informational import build_graded_informational

    source = informational_source(tmp_path / "src")
    outputs, logs = [], []
    for name in ("a", "b"):
        out = tmp_path / name
        log = BuildLog(out)
        build_graded_informational(source, out, log)
        outputs.append(built_files(out))
        logs.append(log.sources)
    assert outputs[0] == outputs[1]  # deterministic
    assert (
        set(outputs[0])
        == set(logs[0])
        == {
            "graded_informational/passages.jsonl",
            "graded_informational/SOURCE.md",
            "graded_informational/arc/stems.jsonl",
            "graded_informational/arc/SOURCE.md",
            "graded_informational/arc/LICENSE_CC-BY-SA-4.0.md",
        }
    )
    rows = read_jsonl(tmp_path / "a/graded_informational/passages.jsonl")
    assert rows and all(list(row) == INFO_FIELDS for row in rows)
    assert {row["split"] for row in rows if row["band"] == "BOUNDARY"} == {"boundary"}
    assert {row["band"] for row in rows if row["split"] == "boundary"} == {"BOUNDARY"}
    for band in ("K5", "BEYOND"):
        assert {row["split"] for row in rows if row["band"] == band} == {"train", "validation"}
    assert_books_on_one_side(rows)
    for row in rows:
        assert MIN_WORDS <= row["n_words"] == count_words(row["text"]) <= MAX_WORDS
        assert "preface" not in row["text"] and "Gutenberg" not in row["text"]
    assert {row["label_basis"] for row in rows if row["pg_id"] == "90006"} == {"inferred"}
    source_md = (tmp_path / "a/graded_informational/SOURCE.md").read_text()
    assert "Public domain in the USA" in source_md and "never training labels" in source_md
    stems = read_jsonl(tmp_path / "a/graded_informational/arc/stems.jsonl")
    assert stems and all("(A)" not in s["text"] and "(1)" not in s["text"] for s in stems)
    arc_md = (tmp_path / "a/graded_informational/arc/SOURCE.md").read_text()
    assert "CC BY-SA 4.0" in arc_md and "should not be distributed" in arc_md


def test_arc_stems_drop_options_short_and_repeated_stems_and_map_grades(tmp_path):
    from littlekit.databuild.informational import arc_band, arc_stem, arc_stems

    source = informational_source(tmp_path)
    stems = arc_stems(source / "graded_informational/arc")
    assert list(stems.columns) == [
        "id",
        "text",
        "grade",
        "band",
        "split",
        "arc_set",
        "arc_split",
        "exam",
        "year",
        "n_words",
    ]
    assert len(stems) == 6 * 5  # 4 graded questions + 1 numbered per file; duplicates and short ones out
    assert not stems["text"].str.contains("duplicate").any()
    assert not stems["text"].str.startswith("Too short").any()
    assert set(stems.loc[stems["grade"] <= 5, "band"]) == {"K5"}
    assert set(stems.loc[stems["grade"] >= 6, "band"]) == {"BEYOND"}
    assert set(stems.loc[stems["arc_split"] == "Train", "split"]) == {"train"}
    assert set(stems.loc[stems["arc_split"] != "Train", "split"]) == {"validation"}
    assert arc_stem("Which is a gas? (A) ice (B) steam (C) rock") == "Which is a gas?"
    assert arc_stem("Rocks form by (1) heat (2) cold") == "Rocks form by"
    assert arc_stem("Is H2O (water) a compound? (A) yes (B) no") == "Is H2O (water) a compound?"
    with pytest.raises(ValueError, match="outside"):
        arc_band(2)
    (source / "graded_informational/arc/ARC-Easy-Dev.csv").unlink()
    with pytest.raises(FileNotFoundError, match="ARC-Easy-Dev.csv"):
        arc_stems(source / "graded_informational/arc")


def test_book_body_cuts_by_markers_and_names_the_file_when_one_is_missing():
    from littlekit.databuild.informational import BookSpec, book_body

    text = "\n".join(
        [
            "TITLE PAGE",
            "CONTENTS",
            "LESSON I.",
            "first lesson text",
            "PAGE 9",
            "",
            "more first lesson",
            "PUBLISHER'S LIST",
            "an advertisement",
            "LESSON I.",
            "second part",
            "7. a numbered paragraph",
            "INDEX",
            "index entries",
        ]
    )
    spec = BookSpec(
        start=(r"CONTENTS", r"LESSON I\."),
        end=r"INDEX",
        drop=((r"PUBLISHER'S LIST", r"LESSON I\."),),
        remove=r"PAGE \d+",
        numbered=True,
    )
    assert book_body(text, spec).split("\n") == [
        "LESSON I.",
        "first lesson text",
        "more first lesson",  # the page header and its blank line are gone: the paragraph reads on
        "",  # numbered=True: a lesson heading or numbered line starts a paragraph
        "LESSON I.",
        "second part",
        "",
        "7. a numbered paragraph",
    ]
    with pytest.raises(ValueError, match=r"books/x\.txt.*APPENDIX"):
        book_body(text, BookSpec(end=r"APPENDIX"), "books/x.txt")


def test_syllables_are_rejoined_but_compounds_stay():
    from littlekit.databuild.informational import rejoin_syllables

    vocabulary = {"indians", "governor", "today"}
    text = "The In-di-ans met the gov-ern-or to-day at Kas-kas-ki-a; a strange-looking twenty-five."
    assert rejoin_syllables(text, vocabulary) == (
        "The Indians met the governor today at Kaskaskia; a strange-looking twenty-five."
    )


@pytest.mark.parametrize(
    ("paragraph", "pupil"),
    [
        ("DEFINITIONS.--1. Pledge, proof, evidence.", False),
        ("NOTES.--Rugby is a celebrated grammar school.", False),
        ("Note to the Teacher.--The pupils should draw the plan.", False),
        ("[Footnote 1: Read Fiske's Discovery of America.]", False),
        ("Name | Star | Meridian\nApus | Alpha | 9 P.M.\nAra | Beta | 10 P.M.", False),
        ("walk-ing\nwatched\nground\nshak-ing\nthought", False),
        ("Notes are what the bird sings in the morning, said Uncle George.", True),
        (PROSE, True),
    ],
)
def test_teacher_notes_tables_and_word_lists_are_not_pupil_text(paragraph, pupil):
    from littlekit.databuild.informational import is_pupil_paragraph

    assert is_pupil_paragraph(paragraph) is pupil


def test_manifest_encodings_are_read_as_decode_book_expects():
    from littlekit.databuild.informational import encoding_hint

    assert encoding_hint("utf-8 with BOM, CRLF") == "utf-8"
    assert encoding_hint("iso-8859-1 (latin-1), CRLF") == "iso-8859-1"
    assert encoding_hint("us-ascii, CRLF") == "us-ascii"
    with pytest.raises(ValueError, match="ebcdic"):
        encoding_hint("ebcdic")


def test_real_graded_informational_splits_whole_books_and_never_trains_on_boundary():
    from littlekit.databuild.common import read_jsonl
    from littlekit.databuild.informational import PER_BOOK

    rows = read_jsonl(INFO / "passages.jsonl")
    assert len({row["source"] for row in rows}) == 31
    assert {row["band"] for row in rows if row["split"] == "train"} == {"K5", "BEYOND"}
    assert {row["band"] for row in rows if row["split"] == "validation"} == {"K5", "BEYOND"}
    assert {row["split"] for row in rows if row["band"] == "BOUNDARY"} == {"boundary"}
    assert_books_on_one_side(rows)
    per_book: dict[str, int] = {}
    for row in rows:
        assert list(row) == INFO_FIELDS
        assert MIN_WORDS <= row["n_words"] == count_words(row["text"]) <= MAX_WORDS
        assert "gutenberg" not in row["text"].lower()
        assert not any(mark in row["text"] for mark in ("[Illustration", "[Sidenote", "“", "—", "|"))
        per_book[row["source"]] = per_book.get(row["source"], 0) + 1
    assert max(per_book.values()) <= PER_BOOK
    for band in ("K5", "BEYOND"):
        members = [row for row in rows if row["band"] == band]
        assert 0.2 <= sum(row["split"] == "validation" for row in members) / len(members) <= 0.4


def test_real_arc_extract_is_small_has_no_options_and_follows_the_grade_rule():
    from littlekit.databuild.common import read_jsonl

    stems = read_jsonl(INFO / "arc/stems.jsonl")
    assert 0 < len(stems) <= 1000  # a small extract of ARC's 7,787 questions, never the full set
    assert len({row["id"] for row in stems}) == len(stems)
    assert len({row["text"].lower() for row in stems}) == len(stems)
    for row in stems:
        assert row["band"] == ("K5" if row["grade"] <= 5 else "BEYOND")
        assert row["split"] == ("train" if row["arc_split"] == "Train" else "validation")
        assert "(A)" not in row["text"] and "(1)" not in row["text"]


def test_every_graded_informational_file_has_its_licence_beside_it():
    files = [p for p in INFO.rglob("*") if p.is_file()]
    assert files
    for path in files:
        source_md = path.parent / "SOURCE.md"
        assert source_md.is_file(), path
        assert "## Licence" in source_md.read_text(encoding="utf-8"), source_md
    arc_md = (INFO / "arc/SOURCE.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in arc_md and "Clark" in arc_md
    licence = (INFO / "arc/LICENSE_CC-BY-SA-4.0.md").read_text(encoding="utf-8")
    assert "Attribution-ShareAlike 4.0 International" in licence
    assert "Public domain in the USA" in (INFO / "SOURCE.md").read_text(encoding="utf-8")


# --- a build never leaves a half-replaced data root -------------------------------------------


def _two_steps(fail_second: bool):
    """A build's steps: one writes a.txt and sub/b.txt, the second writes c.txt or fails."""
    from littlekit.databuild.common import write_text

    def steps(staging, log):
        def second():
            if fail_second:
                raise RuntimeError("the second step failed")
            return write_text(staging / "c.txt", "new c", log, "test")

        return [
            ("first", lambda: (write_text(staging / "a.txt", "new a", log, "test"),
                               write_text(staging / "sub/b.txt", "new b", log, "test"))),
            ("second", second),
        ]  # fmt: skip

    return steps


def test_a_failing_build_leaves_the_data_root_as_it_was(tmp_path):
    from littlekit.databuild import build_staged

    out = tmp_path / "data"
    out.mkdir()
    (out / "a.txt").write_text("old a")
    (out / "MANIFEST.tsv").write_text("old manifest")
    with pytest.raises(RuntimeError, match="second step failed"):
        build_staged(out, _two_steps(fail_second=True), force=True)
    assert sorted(p.name for p in out.iterdir()) == ["MANIFEST.tsv", "a.txt"]
    assert (out / "a.txt").read_text() == "old a" and (out / "MANIFEST.tsv").read_text() == "old manifest"
    assert [p.name for p in tmp_path.iterdir()] == ["data"]  # no staging folder left behind


def test_a_build_refuses_a_non_empty_root_without_force_and_keeps_foreign_files(tmp_path, capsys):
    from littlekit.cli import main
    from littlekit.databuild import MANIFEST, build_staged

    out = tmp_path / "data"
    out.mkdir()
    (out / "a.txt").write_text("old a")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="already holds files.*--force"):
        build_staged(out, _two_steps(fail_second=False))
    assert (out / "a.txt").read_text() == "old a"
    stray = build_staged(out, _two_steps(fail_second=False), force=True)
    assert stray == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    built = [(out / name).read_text() for name in ("a.txt", "sub/b.txt", "c.txt")]
    assert built == ["new a\n", "new b\n", "new c\n"]
    manifest = (out / MANIFEST).read_text().splitlines()
    assert [line.split("\t")[0] for line in manifest[1:]] == ["README.md", "a.txt", "c.txt", "sub/b.txt"]
    assert "notes.txt was not written by this build" in capsys.readouterr().out
    # --out has no default: a build never lands in ./data by accident
    assert main(["data", "build", "--from", str(tmp_path)]) == 2
    assert "required: --out" in capsys.readouterr().err
