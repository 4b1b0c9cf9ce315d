"""Jeopardy science: loaders on fixtures of both real schemas, selection, grading, the NGSS judge
against a real loopback server, and the project-written clue set."""

import json
from pathlib import Path

import pandas as pd
import pytest
from judge_server import JudgeServer
from train_data import tiny_qwen3

from littlekit.evals.answers import first_answer, gold_variants, normalise_answer
from littlekit.evals.answers import grade_response as grade
from littlekit.evals.jeopardy.evaluation import (
    SHOTS,
    empty_table,
    evaluate_generation,
    format_prompt,
    pass_at_1,
)
from littlekit.evals.jeopardy.labels import (
    SPLITS,
    attach_split,
    author_label,
    label_clues,
    ngss_dci_table,
    ngss_prompt,
    sample_per_split,
    save_labels,
)
from littlekit.evals.jeopardy.loaders import (
    AUTHORED_DIR,
    AUTHORED_SOURCE,
    COLUMNS,
    SOURCE_KAGGLE,
    SOURCE_TSV,
    JeopardyFormatError,
    judge_text,
    load_authored,
    load_jeopardy,
)
from littlekit.evals.jeopardy.selection import science_keyword, select_science
from littlekit.evals.jeopardy.verdicts import PAIR, accuracy_gaps, bpb_comparison, empty_lines, verdict_lines
from littlekit.judge.cache import JudgeCache
from littlekit.judge.labels import read_labels
from littlekit.judge.openai_backend import OpenAIChatBackend

FIXTURES = Path(__file__).parents[1] / "fixtures" / "jeopardy"


# ------------------------------------------------------------------------------------ loaders

def test_season_tsv_swaps_answer_and_question_and_counts_drops():
    frame, report = load_jeopardy(FIXTURES / "season.tsv")
    assert list(frame.columns) == list(COLUMNS)
    assert frame["clue"].tolist() == [
        "This big cat is called the king of the jungle",
        'Water turns into this "solid" when it freezes',
        "NaCl is the formula for this seasoning",
        "H.G. Wells wrote about this machine for travelling in time",
        "The capital of France",
    ]
    assert frame["response"].tolist()[:3] == ["a lion", "ice", "(table) salt"]
    assert frame["value"].tolist()[:3] == [200, 400, 800]
    assert set(frame["source"]) == {SOURCE_TSV}
    assert report.read == 8 and report.kept == 5
    assert dict(report.dropped) == {"media clue": 1, "empty clue or response": 1, "duplicate": 1}
    assert frame["id"].is_unique and frame["id"].str.len().eq(16).all()


def test_season_tsv_malformed_rows_raise_with_line_or_are_counted():
    with pytest.raises(JeopardyFormatError, match=r"malformed.tsv:line 3: expected 9 tab-sep"):
        load_jeopardy(FIXTURES / "season_malformed.tsv")
    frame, report = load_jeopardy(FIXTURES / "season_malformed.tsv", on_error="skip")
    assert frame["response"].tolist() == ["a penguin", "gravity"]
    assert report.read == 4 and dict(report.dropped) == {"malformed": 2} and report.bad_lines == [3, 4]


def test_season_tsv_bad_header_and_number(tmp_path):
    bad = tmp_path / "x.tsv"
    bad.write_text("round\tvalue\tcategory\n1\t200\tSCIENCE\n", encoding="utf-8")
    with pytest.raises(JeopardyFormatError, match="line 1: header"):
        load_jeopardy(bad)
    lines = (FIXTURES / "season_malformed.tsv").read_text().splitlines()
    (tmp_path / "y.tsv").write_text("\n".join([lines[0], lines[3]]) + "\n", encoding="utf-8")
    with pytest.raises(JeopardyFormatError, match=r"line 2: clue_value 'four hundred' is not a number"):
        load_jeopardy(tmp_path / "y.tsv")


def test_kaggle_json_clue_is_question_and_errors_name_the_item():
    with pytest.raises(JeopardyFormatError, match=r"kaggle.json:item 5: missing fields \['question'\]"):
        load_jeopardy(FIXTURES / "kaggle.json")
    frame, report = load_jeopardy(FIXTURES / "kaggle.json", on_error="skip")
    assert frame["clue"].iloc[0] == "This organ cleans your blood and makes urine"  # quotes stripped
    assert frame["response"].tolist() == ["the kidneys", "Mercury (the planet)", "George Washington",
                                          "carbon dioxide (or CO2)"]
    assert frame["value"].tolist()[:3] == [200, 400, 600] and pd.isna(frame["value"].iloc[3])
    assert report.read == 7 and dict(report.dropped) == {"malformed": 2, "media clue": 1}
    assert set(frame["source"]) == {SOURCE_KAGGLE}


def test_kaggle_csv_with_spaced_headers():
    with pytest.raises(JeopardyFormatError, match=r"kaggle.csv:line 6: expected 7 comma-sep.*got 6"):
        load_jeopardy(FIXTURES / "kaggle.csv")
    frame, report = load_jeopardy(FIXTURES / "kaggle.csv", on_error="skip")
    assert frame["category"].tolist() == [
        "THE HUMAN BODY", "ASTRONOMY", "INSECTS", "HISTORY", "EARTH SCIENCE"]
    assert frame["clue"].iloc[1] == "This planet, the closest to the Sun, has no moons"
    assert frame["value"].tolist()[2] == 1200 and pd.isna(frame["value"].iloc[4])
    assert report.read == 6 and report.kept == 5 and report.bad_lines == [6]


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    with pytest.raises(JeopardyFormatError, match="unknown Jeopardy format"):
        load_jeopardy(tmp_path / "a.txt")
    with pytest.raises(FileNotFoundError, match="no Jeopardy file"):
        load_jeopardy(tmp_path / "none.tsv")
    (tmp_path / "b.json").write_text("{", encoding="utf-8")
    with pytest.raises(JeopardyFormatError, match="b.json:line 1: not valid JSON"):
        load_jeopardy(tmp_path / "b.json")


def test_selection_counts_add_up():
    frame, _ = load_jeopardy(FIXTURES / "season.tsv")
    selected, counts = select_science(frame)
    assert selected["category"].tolist() == ["ANIMALS", "SCIENCE", "CHEMISTRY"]
    assert counts == {"input": 5, "selected": 3, "excluded": 1, "no_keyword": 1,
                      "by_keyword": {"ANIMALS": 1, "SCIENCE": 1, "CHEMISTRY": 1}}
    assert science_keyword("THE HUMAN BODY") == "HUMAN BODY"
    assert science_keyword("SCIENCE FICTION") is None and science_keyword("STATE BIRDS") is None
    assert science_keyword("SCIENTIFICALLY SPEAKING") is None  # whole words only


# ------------------------------------------------------------------------------ grading

@pytest.mark.parametrize(("completion", "gold", "correct"), [
    ("What is the Beagle?", "(the) Beagle", True),
    ("beagle", "(the) Beagle", True),
    ("HMS Beagle", "(the) Beagle", False),
    ("the Aloha State", "Hawaii (or the Aloha State)", True),
    ("Hawaii", "Hawaii (or the Aloha State)", True),
    ("Who are the Wright Brothers", "the Wright brothers", True),
    ("what's a lion? It roars.", "a lion", True),
    ("a lioness", "a lion", False),
    ("Mercury", "Mercury (the planet)", True),
    ("mercury the planet", "Mercury (the planet)", True),
    ("an alligator", "a crocodile or an alligator", True),
    ("crocodile", "a crocodile or an alligator", True),
    ("8", "eight", True),
    ("eight legs", "8", True),
    ("1,000 degrees", "1000", True),
    ("3.14", "3.14", True),
    ("3", "3.14", False),
    ("Schrödinger", "Schrodinger", True),
    ("", "ice", False),
    ("\nice", "ice", True),
    ("the trunk of the elephant", "the trunk", True),
    ("trunks", "the trunk", False),
    ("O2", "O<sub>2</sub>", False),
    ("Newton's laws", "Newton", True),
    ("Dr. Paul Ehrlich. He won a Nobel", "Dr. (Paul) Ehrlich", True),
    ("H.G. Wells", "H.G. Wells", True),
    ("(J. Robert) Oppenheimer", "(J. Robert) Oppenheimer", True),
    ("A", "A", True),
    ("polonium", "(1 of) radium (or polonium)", True),
    ("phosphorus", "(1 of) nitrogen, phosphorus, or potassium", True),
    ("sodium", "(1 of) nitrogen, phosphorus, or potassium", False),
])
def test_grade_cases(completion, gold, correct):
    assert grade(completion, gold) is correct


def test_normalise_and_variants():
    assert normalise_answer("What is THE Big-Bang, (theory)?") == "big bang theory"
    assert gold_variants("Hawaii (or the Aloha State)") == ["hawaii", "aloha state"]
    assert gold_variants("(the) Beagle") == ["beagle"]
    assert gold_variants("a crocodile or an alligator") == [
        "crocodile or alligator", "crocodile", "alligator"]
    assert first_answer("the sun. And then\nmore") == "the sun"


def test_pass_at_1_with_exact_intervals():
    results = pd.DataFrame({"model": ["A"] * 4 + ["B"] * 2,
                            "split": ["K-5", "K-5", "Beyond K-5", "K-5", "K-5", "K-5"],
                            "correct": [True, False, False, True, False, False]})
    table = pass_at_1(results)
    row = table[(table["model"] == "A") & (table["split"] == "K-5")].iloc[0]
    assert (row["n"], row["correct"], row["accuracy"]) == (3, 2, pytest.approx(2 / 3))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.0943, 0.9916), abs=1e-4)  # Clopper-Pearson
    zero = table[table["model"] == "B"].iloc[0]
    assert zero["ci_low"] == 0.0 and zero["ci_high"] == pytest.approx(1 - 0.025 ** 0.5)  # never [0, 0]


def test_prompt_format_ends_with_response():
    prompt = format_prompt("ANIMALS", "This cat roars")
    assert prompt.endswith("Category: ANIMALS\nClue: This cat roars\nResponse:")
    assert prompt.count("Response:") == len(SHOTS) + 1


# ---------------------------------------------------------------------------------- judge

def ngss_answer(body: dict) -> str:
    user = body["messages"][1]["content"]
    assert "Correct response:" in user and "MS-PS1" in body["messages"][0]["content"]
    if "lion" in user or "ice" in user:
        return '{"rationale": "animals and states of matter are elementary", "dci": "2-PS1", "band": "K5"}'
    if "NaCl" in user:
        return 'Here you go: {"rationale": "chemical formulas", "dci": "MS-PS1", "band": "K8"}'
    return "I cannot tell."


def test_label_clues_against_a_real_server_and_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    frame, _ = load_jeopardy(FIXTURES / "season.tsv")
    selected, _ = select_science(frame)
    selected = pd.concat([selected, frame[frame["category"] == "WORLD CAPITALS"]], ignore_index=True)
    cache_path = tmp_path / "cache.sqlite"
    with JudgeServer(answer=ngss_answer) as server:
        backend = OpenAIChatBackend(server.url, "judge-x", timeout=5.0, max_retries=1, backoff_base=0.01)
        with JudgeCache(cache_path) as cache:
            labels = label_clues(selected, backend, cache)
        assert server.count == 4
        with JudgeCache(cache_path) as cache:
            again = label_clues(selected, backend, cache)
        assert server.count == 4  # every answer came from the cache
    assert [r["band"] for r in labels] == ["K5", "K5", "K8", None]
    assert [r["judge"]["dci"] for r in labels] == ["2-PS1", "2-PS1", "MS-PS1", None]
    assert labels[3]["judge"]["errors"]["ngss_science"].startswith("parse:")
    assert [r["id"] for r in labels] == selected["id"].tolist()
    assert [r["band"] for r in again] == [r["band"] for r in labels]
    assert all(r["judge"]["usage"]["cached"] == 1 for r in again)

    path = tmp_path / "labels.jsonl"
    assert save_labels(labels, path) == 4
    split, counts = attach_split(selected, read_labels(path))
    assert split["split"].tolist() == ["K-5", "K-5", "Beyond K-5"]
    assert counts == {"input": 4, "labelled": 3, "unlabelled": 0, "null_band": 1}


def test_attach_split_rejects_a_label_for_other_text():
    frame, _ = load_jeopardy(FIXTURES / "season.tsv")
    record = author_label(frame.iloc[0], "K5", "K-LS1")
    changed = frame.head(1).assign(response="a tiger")
    with pytest.raises(ValueError, match="different clue text"):
        attach_split(changed, [record])
    split, counts = attach_split(frame.head(2), [record])
    assert counts == {"input": 2, "labelled": 1, "unlabelled": 1, "null_band": 0}


def test_sample_per_split_caps_each_split():
    frame, labels = load_authored()
    clues, _ = attach_split(frame, labels)
    sample = sample_per_split(clues, 5, seed=1)
    assert sample["split"].value_counts().to_dict() == {"K-5": 5, "Beyond K-5": 5}
    assert sample["id"].tolist() == sample_per_split(clues, 5, seed=1)["id"].tolist()
    assert len(sample_per_split(clues, 1000)) == len(clues)


def test_ngss_prompt_quotes_every_band():
    table = ngss_dci_table()
    assert set(table["band"]) == {"K5", "K8", "K12"}
    assert {"2-LS4", "MS-PS1", "HS-LS1", "5-ESS1"} <= set(table["dci"])
    prompt = ngss_prompt()
    assert prompt.name == "ngss_science" and "HS-PS4" in prompt.system and len(prompt.version) == 12


def test_the_ngss_prompt_is_the_judges_and_the_grader_is_the_evaluations_one():
    """The prompt is built beside the judge's other prompts and the response grader is the one in
    evals.answers; the Jeopardy names are those objects, so there is one of each."""
    from littlekit.databuild.corpora import load_standards
    from littlekit.evals import answers
    from littlekit.judge import prompts

    assert ngss_prompt().version == prompts.build_ngss_prompt(load_standards()).version
    assert ngss_dci_table().equals(prompts.dci_table(load_standards()))
    assert grade is answers.grade_response and normalise_answer is answers.normalise_answer
    assert gold_variants is answers.gold_variants and first_answer is answers.first_answer


# ------------------------------------------------------------------------- authored clue set

def test_authored_set_is_complete_and_labelled():
    frame, labels = load_authored()
    split, counts = attach_split(frame, labels)
    assert counts["input"] == len(frame) == counts["labelled"] >= 150
    sizes = split["split"].value_counts()
    assert abs(sizes["K-5"] - sizes["Beyond K-5"]) <= 10
    dci_band = ngss_dci_table().set_index("dci")["band"]
    for record in labels:
        assert record["source"] == AUTHORED_SOURCE and record["judge"] is None
        assert record["dci"] in dci_band.index, record
        assert dci_band[record["dci"]] == record["band"], record
    selected, sel_counts = select_science(frame)
    assert sel_counts["selected"] == len(frame)  # every category is a science category
    # every gold response survives its own grading
    assert all(grade(r, r) for r in frame["response"])
    assert json.loads((Path(__file__).parents[2] / "data" / AUTHORED_DIR / "labels.jsonl")
                      .read_text().splitlines()[0])["band"] in {"K5", "K8", "K12"}


def test_label_clues_with_a_local_transformers_judge(tmp_path, one_thread):
    """The same labelling through TransformersBackend on a real tiny Qwen3 (its answers are noise:
    every record must still come back, with a parse error or a band, and a re-run is all cache)."""

    from littlekit.databuild.corpora import load_standards
    from littlekit.judge.local_backend import TransformersBackend
    from littlekit.lm.tokenizer import train_tokenizer

    frame = load_jeopardy(FIXTURES / "season.tsv")[0].head(3)
    standards = load_standards()
    few = standards[standards["code"].isin(["K-LS1-1", "MS-PS1-1", "HS-LS1-1"])]
    prompt = ngss_prompt(few)
    assert {"K-LS1", "MS-PS1", "HS-LS1"} == set(ngss_dci_table(few)["dci"])
    tokenizer = train_tokenizer([prompt.system, *map(judge_text, frame.to_dict("records"))] * 5,
                                vocab_size=400)
    model = tiny_qwen3(tokenizer, max_positions=4096)
    backend = TransformersBackend(model, tokenizer, name="tiny-qwen3", max_new_tokens=8, device="cpu")
    with JudgeCache(tmp_path / "c.sqlite") as cache:
        labels = label_clues(frame, backend, cache, prompt=prompt)
        assert len(cache) == len(frame)
        again = label_clues(frame, backend, cache, prompt=prompt)
    assert [r["id"] for r in labels] == frame["id"].tolist()
    for record in labels:
        assert record["band"] is not None or record["judge"]["errors"]["ngss_science"].startswith("parse:")
        assert record["judge"]["model"] == "tiny-qwen3" and record["judge"]["usage"]["cached"] == 0
    assert [r["band"] for r in again] == [r["band"] for r in labels]
    assert all(r["judge"]["usage"]["cached"] == 1 for r in again)



# ------------------------------------------------------------- answers you can grade, verdicts

def newline_first(tokenizer):
    """A real tiny Qwen3 whose first choice is mostly a newline, as the nano models' is after
    "Response:" (see tests/evals/test_eval_generate.py)."""
    import torch

    model = tiny_qwen3(tokenizer, max_positions=1024).double()
    newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] += 6.0
        model.lm_head.weight[newline, 0] = 4.0
    return model


def test_generation_answers_where_the_plain_rule_left_them_empty(one_thread):
    from littlekit.lm.tokenizer import train_tokenizer

    clues = sample_per_split(attach_split(*load_authored())[0], 4, seed=0)
    prompts = [format_prompt(c, q) + " " + r + "\n\n"
               for c, q, r in zip(clues["category"], clues["clue"], clues["response"], strict=True)]
    tokenizer = train_tokenizer(prompts * 3, vocab_size=400)
    model = newline_first(tokenizer)
    out = evaluate_generation(model, tokenizer, clues, max_new_tokens=6, batch_size=3, plain=True)
    assert out["plain_empty"].mean() >= 0.5  # the old decoding: most answers empty, as the nano models'
    assert not out["empty"].any()  # the answer-first rule: every answer has text
    assert out["completion"].str.contains("\n").sum() == 0  # still one line
    assert (out["empty"] == (out["completion"].str.strip() == "")).all()
    assert (out["ungradeable"] >= out["empty"]).all()  # an empty answer has no word either
    same = ~out["plain_empty"]
    assert (out.loc[same, "completion"] == out.loc[same, "plain_completion"]).all()
    table = empty_table(out.assign(model="tiny"))
    assert table["n"].tolist() == [4, 4] and table["empty"].tolist() == [0, 0]
    assert (table["ci_low"] == 0).all()
    assert table["ci_high"].tolist() == pytest.approx([1 - 0.025 ** 0.25] * 2)
    assert table["plain_empty"].sum() == out["plain_empty"].sum()
    assert table["ungradeable"].sum() == out["ungradeable"].sum()
    assert (table["ungradeable_ci_low"] <= table["ungradeable_share"]).all()
    assert (table["plain_ci_low"] <= table["plain_share"]).all()
    lines = empty_lines(table)
    assert len(lines) == 2 and all("exact 95% CI" in line and "plain rule" in line for line in lines)
    assert all("no word to grade" in line for line in lines)
    marks = pd.DataFrame({"model": "m", "split": "K-5", "completion": [":", " the sun", ""]})
    marks = marks.assign(empty=marks["completion"].str.strip() == "",
                         ungradeable=[True, False, True])
    assert empty_table(marks)[["empty", "ungradeable"]].iloc[0].tolist() == [1, 2]
    plain_only = evaluate_generation(model, tokenizer, clues, max_new_tokens=6, require_text=False)
    assert plain_only["completion"].tolist() == out["plain_completion"].tolist()
    assert "plain_completion" not in plain_only


def pair_frames(n: int, correct: dict, nats: dict, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Generations and likelihood rows for LittleLearner and UNFILTERED on n clues per split:
    `correct[(model, split)]` the share right, `nats[(model, split)]` the mean nats per 10 bytes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    gen, scored = [], []
    for split in SPLITS:
        for i in range(n):
            for model in ("LittleLearner", "UNFILTERED"):
                key = (model, split)
                gen.append({"id": f"{split}{i}", "model": model, "split": split,
                            "correct": bool(i < round(correct[key] * n))})
                scored.append({"id": f"{split}{i}", "model": model, "split": split, "bytes": 10,
                               "nats": float(nats[key] + rng.normal(0, 1))})
    return pd.DataFrame(gen), pd.DataFrame(scored)


def checked(lines: list[str]) -> list[str]:
    """Every verdict line carries an interval or says it cannot decide."""
    for line in lines[:-1]:
        assert "CI" in line or "inconclusive" in line or "untestable" in line, line
        if "as in the paper" in line or "the paper's direction" in line:
            assert "CI" in line, line
    assert "seed" in lines[-1]
    return lines


def test_verdicts_say_untestable_at_zero_and_inconclusive_without_a_clear_effect():
    flat = {(m, s): 0.0 for m in PAIR for s in SPLITS}
    gen, scored = pair_frames(40, flat, {k: 20.0 for k in flat})
    lines = checked(verdict_lines(gen, scored))
    assert any("untestable at this scale" in line for line in lines)
    assert "0/40 = 0.0% (exact 95% CI 0.0% to 8.8%)" in lines[0]  # not a bootstrap's [0, 0]
    likelihood = next(line for line in lines if line.startswith("Likelihood direction"))
    assert "inconclusive" in likelihood and "as in the paper" not in likelihood
    ratio = next(line for line in lines if line.startswith("Inside"))
    assert "comparable (the interval lies within" in ratio


def test_verdicts_follow_the_paper_only_when_the_interval_excludes_zero():
    acc = {("LittleLearner", "K-5"): 0.5, ("UNFILTERED", "K-5"): 0.5,
           ("LittleLearner", "Beyond K-5"): 0.0, ("UNFILTERED", "Beyond K-5"): 0.5}
    nats = {("LittleLearner", "K-5"): 20.0, ("UNFILTERED", "K-5"): 20.0,
            ("LittleLearner", "Beyond K-5"): 30.0, ("UNFILTERED", "Beyond K-5"): 21.0}
    gen, scored = pair_frames(40, acc, nats)
    lines = checked(verdict_lines(gen, scored))
    direction = next(line for line in lines if line.startswith("Accuracy direction"))
    assert "the paper's direction" in direction and "+50.0%" in direction
    likelihood = next(line for line in lines if line.startswith("Likelihood direction"))
    assert likelihood.endswith("as in the paper.")
    gaps = accuracy_gaps(gen)
    assert gaps["change"][0] == pytest.approx(0.5) and gaps["change"][1] > 0
    bpb = bpb_comparison(scored)
    assert bpb["rise difference"][1] > 0 and bpb["ratio"][1] < 1 < bpb["ratio"][2]
    # the opposite effect reads as the opposite, not as the paper's
    swap = {"LittleLearner": "UNFILTERED", "UNFILTERED": "LittleLearner"}
    swapped = scored.assign(model=scored["model"].map(swap))
    opposite = next(line for line in verdict_lines(gen, swapped) if line.startswith("Likelihood dir"))
    assert "opposite of the paper's direction" in opposite
