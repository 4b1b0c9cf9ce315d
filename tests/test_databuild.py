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

DATA = Path(__file__).resolve().parent.parent / "data"

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
    assert total < 35 * 1024 * 1024


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
