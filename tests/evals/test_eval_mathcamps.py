"""MathCAMPS loading, the paper's filters, prompts, evaluation on a real tiny Qwen3, aggregation."""

from __future__ import annotations

import json
import random
import re

import pandas as pd
import pytest
import torch
from train_data import tiny_qwen3

from littlekit.curriculum.answers import numbers
from littlekit.evals import mathcamps as mc
from littlekit.evals.generate import generate
from littlekit.evals.passk import pass_at_k
from littlekit.lm.tokenizer import train_tokenizer
from littlekit.text import word_tokens

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def row(id_, standard, statement, answer, type_=mc.ORIGINAL, followup_to=None) -> dict:
    return {
        "id": id_,
        "standard": standard,
        "statement": statement,
        "answer": answer,
        "type": type_,
        "followup_to": followup_to,
    }


def write_fixture(root, rows) -> None:
    folder = root / "mathcamps"
    folder.mkdir(parents=True)
    (folder / "mathcamps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def fixture_rows() -> list[dict]:
    rows = []
    # 3.NBT.A.2: 40 distinct answers, two of them quoted in the question
    for i in range(40):
        rows.append(
            row(
                f"3.NBT.A.2-{i}-0",
                "3.NBT.A.2",
                f"A shop had {500 + i} pens and sold {i + 1}. How many left?",
                str(499),
            )
        )
    for i in range(40):
        rows[i]["answer"] = str(499 + i - (i + 1) + 1)  # 500 + i - (i + 1) = 499; made distinct below
        rows[i]["answer"] = str(100 + i)
    rows[0]["statement"] = "Write 100 in words and then as a number."  # answer 100 quoted
    rows[1]["statement"] = "What is 1010 minus 909?"  # answer 101 appears only inside other numbers
    # K.OA.A.5: 5 distinct answers -> removed as a standard
    for i in range(10):
        rows.append(row(f"K.OA.A.5-{i}-0", "K.OA.A.5", f"What is {i % 5} + 0?", str(i % 5)))
    # 6.EE.B.7: many answers, excluded by name
    for i in range(35):
        rows.append(
            row(f"6.EE.B.7-{i}-0", "6.EE.B.7", f"A farmer had {400 + i} grapes and sold 78.", str(322 + i))
        )
    # a follow-up of 7.NS.A.1-decimal
    for i in range(31):
        rows.append(
            row(f"7.NS.A.1-decimal-{i}-0", "7.NS.A.1-decimal", f"What is {i}.5 + 1.25?", f"{i + 1}.75")
        )
    rows.append(
        row(
            "7.NS.A.1-decimal-0-1",
            "7.NS.A.1-decimal",
            "Now add 1 to that result.",
            "2.75",
            "incremental-followup",
            "7.NS.A.1-decimal-0-0",
        )
    )
    return rows


def test_grade_and_band_of_standards():
    assert mc.grade_of_standard("K.OA.A.4") == "K"
    assert mc.grade_of_standard("7.NS.A.1-decimal") == "7"
    assert mc.grade_of_standard("3.MD.D.8-polygon") == "3"
    assert [mc.band_of_grade(g) for g in ("K", "5", "6", "8")] == ["K-5", "K-5", "Beyond K-5", "Beyond K-5"]
    with pytest.raises(ValueError, match="CCSS standard code"):
        mc.grade_of_standard("HSN.VM.A.2")


def test_load_adds_grade_and_band_and_names_bad_lines(tmp_path):
    write_fixture(tmp_path, fixture_rows())
    frame = mc.load(tmp_path)
    assert len(frame) == 117
    assert set(frame["grade"]) == {"K", "3", "6", "7"}
    assert frame.loc[frame["standard"] == "6.EE.B.7", "band"].unique().tolist() == ["Beyond K-5"]
    bad = tmp_path / "bad"
    rows = fixture_rows()
    rows[3]["answer"] = ""
    write_fixture(bad, rows)
    with pytest.raises(ValueError, match="line 4: field 'answer'"):
        mc.load(bad)


def test_answer_in_question_counts_whole_numbers_only():
    assert mc.answer_in_question("Write 100 in words", "100")
    assert not mc.answer_in_question("What is 1010 minus 909?", "101")
    assert mc.answer_in_question("What is 1010 minus 909?", "101", whole_number=False)
    assert not mc.answer_in_question("Compute 76/76 + 96/16", "7")
    assert not mc.answer_in_question("It costs 2.75 now", "2.7")
    assert mc.answer_in_question("Fill in (<, >, or =)", "<")


def test_filters_remove_what_the_paper_says_and_counts_add_up(tmp_path):
    write_fixture(tmp_path, fixture_rows())
    frame = mc.load(tmp_path)
    kept, counts = mc.apply_filters(frame)
    assert counts["removed"].tolist() == [0, 10, 1, 35]
    assert counts["remaining"].tolist() == [117, 107, 106, 71]
    assert counts["removed"].sum() + counts["remaining"].iloc[-1] == len(frame)
    assert counts["removed_standards"].tolist() == ["", "K.OA.A.5", "", "6.EE.B.7"]
    assert "3.NBT.A.2-0-0" not in set(kept["id"]) and "3.NBT.A.2-1-0" in set(kept["id"])
    assert set(kept["standard"]) == {"3.NBT.A.2", "7.NS.A.1-decimal"}


def test_filters_on_the_released_data():
    frame = mc.load()
    kept, counts = mc.apply_filters(frame)
    assert counts["removed"].sum() + len(kept) == len(frame) == 9607
    assert "6.EE.B.7" not in set(kept["standard"])
    assert kept.groupby("standard")["answer"].nunique().min() >= 1
    assert not any(
        mc.answer_in_question(s, a) for s, a in zip(kept["statement"], kept["answer"], strict=True)
    )
    unique = frame.groupby("standard")["answer"].nunique()
    assert set(kept["standard"]) == set(unique[unique >= 30].index) - {"6.EE.B.7"}
    for standards in mc.LEARNING_PATHS.values():  # Figure 15's paths survive the filters
        assert set(standards) <= set(kept["standard"])


def test_clean_answer_drops_stored_trailing_zeros():
    assert mc.clean_answer("27.3000000000000") == "27.3"
    assert mc.clean_answer("87.0000000000000") == "87"
    assert mc.clean_answer("-1.03448275862069") == "-1.03448275862069"
    assert mc.clean_answer("100") == "100" and mc.clean_answer("[(1, 64)]") == "[(1, 64)]"


def test_sample_per_standard_is_seeded_and_capped(tmp_path):
    write_fixture(tmp_path, fixture_rows())
    frame = mc.load(tmp_path)
    sample = mc.sample_per_standard(frame, 3, seed=1)
    assert sample["standard"].value_counts().max() == 3 and sample["standard"].nunique() == 4
    assert sample["id"].tolist() == mc.sample_per_standard(frame, 3, seed=1)["id"].tolist()
    assert mc.sample_per_standard(frame, None) is frame


def test_prompts_end_in_answer_and_followups_carry_their_original(tmp_path):
    write_fixture(tmp_path, fixture_rows())
    frame = mc.load(tmp_path)
    followup = frame[frame["id"] == "7.NS.A.1-decimal-0-1"]
    (text,) = mc.question_prompts(followup, frame)
    assert text.endswith("Question: Now add 1 to that result.\nAnswer:")
    assert "Question: What is 0.5 + 1.25?\nAnswer: 1.75\n\n" in text
    assert text.startswith("Question: " + mc.FEW_SHOT[0][0])
    with pytest.raises(ValueError, match="followup_to 'nope'"):
        mc.question_prompts(followup.assign(followup_to="nope"), frame)


@pytest.fixture(scope="module")
def tiny():
    """A random tiny Qwen3 whose output layer only favours number tokens, so its answers are numbers."""
    rng = random.Random(0)
    texts = [" ".join(str(rng.randint(0, 999)) for _ in range(8)) for _ in range(300)]
    tokenizer = train_tokenizer(texts, vocab_size=300)
    model = tiny_qwen3(tokenizer, max_positions=512, tie_word_embeddings=False)
    is_number = torch.tensor(
        [bool(re.fullmatch(r" ?\d+", tokenizer.decode([i]))) for i in range(len(tokenizer))]
    )
    with torch.no_grad():
        model.lm_head.weight[~is_number] = 0.0
        model.lm_head.weight[is_number] *= 4
    return model, tokenizer


def test_evaluate_counts_correct_samples_with_a_real_model(tiny):
    model, tokenizer = tiny
    questions = pd.DataFrame(
        [row(f"3.OA.C.7-{i}-0", "3.OA.C.7", f"What is {i} + {i}?", "0") for i in range(12)]
    )
    questions["grade"], questions["band"] = "3", "K-5"
    # the model's own greedy answers as gold: every question then has c = 1 of n = 1
    greedy = generate(
        model, tokenizer, mc.question_prompts(questions, questions), max_new_tokens=8, stop=mc.STOP
    )
    firsts = [numbers(c[0].splitlines()[0] if c[0].strip() else "") for c in greedy]
    answered = [i for i, found in enumerate(firsts) if found]
    assert len(answered) >= 3, "the tiny model should write numbers after 'Answer:' for some questions"
    questions = questions.iloc[answered].reset_index(drop=True)
    questions["answer"] = [firsts[i][0].text for i in answered]
    result = mc.evaluate(model, tokenizer, questions, n_samples=1, temperature=0.0, max_new_tokens=8)
    assert result["n"].tolist() == [1] * len(questions) and result["c"].tolist() == [1] * len(questions)
    wrong = questions.assign(answer=[str(int(numbers(a)[0].value) + 1000) for a in questions["answer"]])
    assert (
        mc.evaluate(model, tokenizer, wrong, n_samples=1, temperature=0.0, max_new_tokens=8)["c"].sum() == 0
    )
    sampled = mc.evaluate(model, tokenizer, questions, n_samples=4, max_new_tokens=8, seed=3)
    assert sampled["n"].tolist() == [4] * len(questions) and sampled["c"].between(0, 4).all()
    assert sampled.equals(mc.evaluate(model, tokenizer, questions, n_samples=4, max_new_tokens=8, seed=3))


def results_frame() -> pd.DataFrame:
    rows = []
    for model, solved in (("LittleLearner", [8, 4, 0]), ("UNFILTERED", [8, 6, 2])):
        for grade, standard, c in zip(
            ("3", "5", "7"), ("3.OA.C.7", "5.NBT.B.6", "7.NS.A.1-decimal"), solved, strict=True
        ):
            for q in range(3):
                rows.append(
                    {
                        "model": model,
                        "id": f"{standard}-{q}",
                        "standard": standard,
                        "grade": grade,
                        "band": mc.band_of_grade(grade),
                        "n": 8,
                        "c": max(0, c - q),
                    }
                )
    return pd.DataFrame(rows)


def test_accuracy_curves_and_learning_paths_aggregate_per_question_pass_at_k():
    results = results_frame()
    table = mc.accuracy_by(results, ["model", "grade"], k=1)
    row7 = table[(table["model"] == "UNFILTERED") & (table["grade"] == "7")].iloc[0]
    assert row7["pass_at_k"] == pytest.approx((2 + 1 + 0) / 24) and row7["problems"] == 3
    assert row7["low"] <= row7["pass_at_k"] <= row7["high"]
    assert table["grade"].astype(str).tolist()[:3] == ["3", "5", "7"]
    bands = mc.accuracy_by(results, ["model", "band"], k=2)
    expected = sum(pass_at_k(8, max(0, c - q), 2) for c in (0,) for q in range(3)) / 3
    assert bands.set_index(["model", "band"]).loc[("LittleLearner", "Beyond K-5"), "pass_at_k"] == expected
    curves = mc.curves_by(results, ["model", "grade"])
    assert sorted(set(curves["k"])) == [1, 2, 4, 8]
    last = curves[(curves["model"] == "UNFILTERED") & (curves["grade"] == "7") & (curves["k"] == 8)]
    assert last["pass_at_k"].item() == pytest.approx(2 / 3)
    path = mc.learning_path_table(results, "division")
    assert path[path["model"] == "LittleLearner"]["standard"].tolist() == [
        "3.OA.C.7",
        "5.NBT.B.6",
        "7.NS.A.1-decimal",
    ]
    assert path["label"].iloc[0] == "Mult/div fluency (within 100)"
    with pytest.raises(ValueError, match="unknown learning path"):
        mc.learning_path_table(results, "geometry")


def test_readability_table_has_both_bands_and_counts():
    questions = pd.DataFrame(
        {
            "statement": [
                "Sam has 3 cats. He gets 2 more. How many cats?",
                "Evaluate the rational expression (-3.25) + 4.5.",
                "Solve 3x + 2 = 11 for x.",
            ],
            "band": ["K-5", "Beyond K-5", "Beyond K-5"],
        }
    )
    table = mc.readability_table(questions)
    assert table.columns.tolist() == ["K-5", "Beyond K-5"]
    assert table.loc["Questions"].tolist() == [1, 2]
    assert table.loc["Mean question length (words)", "K-5"] == len(word_tokens(questions["statement"][0]))
    assert list(table.index[:4]) == list(mc.PAPER_READABILITY.index)
