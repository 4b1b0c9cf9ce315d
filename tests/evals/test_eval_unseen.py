"""Held out means unseen: a small LittleLearner/UNFILTERED pair whose training text holds planted
evaluation items (held-out curriculum problems, CLEAR excerpts), and evaluations that must not
score any of them though no --exclude is given. The check decodes each model's training shards
itself, apart from `littlekit.evals.seen`."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from train_data import demo_texts

from littlekit.cli import main
from littlekit.curriculum.units import select_units
from littlekit.evals import clear as clear_eval
from littlekit.evals import curriculum as ce
from littlekit.evals.models import load_causal_lm
from littlekit.evals.seen import TrainingText, seen_items
from littlekit.lm.matched_corpora import exposure_records, prepare_matched_shards
from littlekit.lm.shards import TokenShards
from littlekit.lm.tokenizer import train_tokenizer
from littlekit.lm.train.config import TrainConfig
from littlekit.lm.train.loop import train

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TINY = {"size": "nano", "seq_len": 64, "global_batch": 4, "micro_batch": 4, "progress": False}
EXCERPTS = [  # CLEAR-like excerpts: the first two are planted in LittleLearner's text
    "Once upon a time a small red hen found some grains of wheat lying in the farmyard near the barn.",
    "The little boat bobbed on the blue water while the children waved from the sandy shore all day.",
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules of the leaf.",
    "The committee deliberated for several hours before reaching a unanimous decision on the matter.",
]
FORMAT = "scratchpad"


def decoded_training_lines(model_dir) -> set[str]:
    """Every line of every document of the shards the checkpoint's trainer_state.json names."""
    from transformers import AutoTokenizer

    config = json.loads((model_dir / "trainer_state.json").read_text())["config"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    lines = set()
    for directory in config["data"]:
        shards = TokenShards(directory)
        for index in range(len(shards)):
            text = tokenizer.decode(shards.document(index), skip_special_tokens=True)
            lines.update(" ".join(line.split()) for line in text.splitlines() if line.strip())
    return lines


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """{label: best checkpoint} of a tiny pair trained a few steps, with planted evaluation items."""
    root = tmp_path_factory.mktemp("pair")
    units = select_units("K5")[:3]
    planted = ce.held_out_records(units, per_unit=4, seed=0, fmt=FORMAT)[0]  # what chapter 12 would draw
    texts = demo_texts(120, max_chars=300)
    k5 = pd.DataFrame({"id": [f"k{i}" for i in range(60)], "text": texts[:58] + EXCERPTS[:2]})
    unfiltered = pd.DataFrame({"id": [f"u{i}" for i in range(60)], "text": texts[60:]})
    math = {
        "littlelearner": exposure_records("K5", per_unit=3, fmt=FORMAT) + planted,
        "unfiltered": exposure_records("all", per_unit=3, fmt=FORMAT),
    }
    corpus = [*k5["text"], *unfiltered["text"], *(r["text"] for r in math["unfiltered"])]
    tokenizer = train_tokenizer(corpus, vocab_size=512, out_dir=root / "tokenizer")
    matched = prepare_matched_shards(k5, unfiltered, tokenizer, root / "shards", 64, 0.1, seed=0, math=math)
    best = {}
    for name, label in (("littlelearner", "LittleLearner"), ("unfiltered", "UNFILTERED")):
        config = TrainConfig(data=matched.training_data(name, 0.5), val_data=str(matched.val(name)),
                             tokenizer=str(root / "tokenizer"), run_dir=str(root / name), max_steps=2,
                             eval_every=1, **TINY)  # fmt: skip
        train(config)
        best[label] = root / name / "best"
    return best, planted


def test_the_curriculum_command_scores_no_problem_the_model_trained_on(pair, tmp_path, capsys):
    best, planted = pair
    model = best["LittleLearner"]
    out = tmp_path / "results.jsonl"
    argv = ["eval", "curriculum", "--model", str(model), "--band", "K5", "--per-unit", "4", "--seed", "0",
            "--format", FORMAT, "--max-new-tokens", "8", "--seen", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    lines = decoded_training_lines(model)
    assert not [r["statement"] for r in rows if " ".join(r["statement"].split()) in lines]
    assert {p["statement"] for p in planted} <= lines  # the planted problems were there to find
    assert not {r["id"] for r in rows} & {p["id"] for p in planted}
    assert "the model's training text" in printed and "seen (in the training text" in printed
    assert len(rows) == 4 * len(select_units("K5"))  # each excluded problem was redrawn


def test_clear_scores_only_excerpts_no_model_of_the_pair_saw(pair):
    best, _ = pair
    models = {label: load_causal_lm(path) for label, path in best.items()}
    clear = pd.DataFrame({"id": [f"c{i}" for i in range(len(EXCERPTS))], "text": EXCERPTS,
                          "bt_easiness": [0.2, -0.4, -1.2, -2.0]})  # fmt: skip
    _, docs = clear_eval.clear_bpb(models, clear, per_bin=None)
    scored = set(docs["id"])
    assert scored == {"c2", "c3"}
    lines = decoded_training_lines(best["LittleLearner"])
    assert not [t for i, t in zip(clear["id"], clear["text"], strict=True) if i in scored and t in lines]
    seen = seen_items(models, EXCERPTS)
    assert seen.by_model == {"LittleLearner": 2, "UNFILTERED": 0} and not seen.unknown


def test_a_run_of_eight_words_counts_as_seen_and_a_hub_model_is_unknown(pair, tmp_path):
    text = TrainingText.of_model(pair[0]["LittleLearner"])
    inside = "Said the hen: " + " ".join(EXCERPTS[0].split()[2:12]) + " and more."
    never = "nothing of the kind was ever written in training"
    assert text.seen_mask([inside, never]).tolist() == [True, False]
    assert TrainingText.of_model(tmp_path) is None  # a folder naming no training data


def test_a_missing_shard_directory_is_named(pair, tmp_path):
    import shutil

    copy = tmp_path / "best"
    shutil.copytree(pair[0]["UNFILTERED"], copy)
    state = json.loads((copy / "trainer_state.json").read_text())
    state["config"]["data"] = {str(tmp_path / "gone"): 1.0}
    (copy / "trainer_state.json").write_text(json.dumps(state))
    with pytest.raises(FileNotFoundError, match="gone"):
        TrainingText.of_model(copy)


def test_evaluate_held_out_scores_the_pair_on_the_same_unseen_problems_and_each_on_its_own_seen(pair):
    best, planted = pair
    models = {label: load_causal_lm(path) for label, path in best.items()}
    units = select_units("K5")[:3]
    scored = ce.evaluate_held_out(models, units, per_unit=4, fmt=FORMAT, seed=0, max_new_tokens=8)
    results = scored.results
    unseen = results[~results["seen"]]
    by_model = {label: set(part["id"]) for label, part in unseen.groupby("model")}
    assert by_model["LittleLearner"] == by_model["UNFILTERED"] and len(by_model["UNFILTERED"]) == 12
    for label, path in best.items():
        lines = decoded_training_lines(path)
        mine = results[results["model"] == label]
        assert not [s for s in mine.loc[~mine["seen"], "statement"] if " ".join(s.split()) in lines]
        assert all(" ".join(s.split()) in lines for s in mine.loc[mine["seen"], "statement"])
    seen_ll = set(results[(results["model"] == "LittleLearner") & results["seen"]]["id"])
    assert {p["id"] for p in planted} == seen_ll  # what memorisation gives is scored apart
    assert "redrawn" in scored.note() and not scored.unknown


def test_the_seen_unseen_table_gives_exact_intervals_never_zero_width_at_zero():
    rows = [{"model": "LL", "band": "BEYOND", "seen": False, "c": 0, "n": 1} for _ in range(32)]
    rows += [{"model": "LL", "band": "K5", "seen": True, "c": 1, "n": 1} for _ in range(4)]
    table = ce.seen_unseen_table(pd.DataFrame(rows)).set_index(["band", "seen"])
    beyond = table.loc[("BEYOND", False)]
    assert (beyond["problems"], beyond["correct"], beyond["exact low"]) == (32, 0, 0.0)
    assert beyond["exact high"] == pytest.approx(0.109, abs=5e-4)  # 0 of 32: up to 10.9%, not [0, 0]
    assert table.loc[("K5", True), "accuracy"] == 1.0


def test_a_science_clue_in_the_training_text_is_never_scored(pair, tmp_path):
    """A clue planted in a copy of LittleLearner's training shards: both Jeopardy evaluations skip it."""
    import shutil

    from littlekit.evals.jeopardy.evaluation import evaluate_generation, evaluate_likelihood, unseen_clues
    from littlekit.lm.shards import write_shards

    best, _ = pair
    clues = pd.DataFrame({
        "category": ["PLANTS", "SPACE"],
        "clue": ["Green plants need this, coming from the sun, to make their own food",
                 "This planet with beautiful rings is the sixth from our sun"],
        "response": ["sunlight", "Saturn"],
    })
    copy = tmp_path / "best"
    shutil.copytree(best["LittleLearner"], copy)
    model, tokenizer = load_causal_lm(copy)
    shards = tmp_path / "planted"
    write_shards(["Did you know? " + clues["clue"][0] + ". Plants are green."], tokenizer, shards)
    (copy / "training_data.json").write_text(json.dumps({"shards": [str(shards)]}))
    model, tokenizer = load_causal_lm(copy)
    generated = evaluate_generation(model, tokenizer, clues, max_new_tokens=4)
    scored = evaluate_likelihood(model, tokenizer, clues)
    assert list(generated["clue"]) == [clues["clue"][1]] and len(scored) == 1
    both = {"LittleLearner": (model, tokenizer), "UNFILTERED": best["UNFILTERED"]}
    kept, seen = unseen_clues(both, clues)
    assert len(kept) == 1 and seen.by_model == {"LittleLearner": 1, "UNFILTERED": 0}
