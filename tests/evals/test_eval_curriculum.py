"""`littlekit eval curriculum`: the held-out rule, prompts and read-back per format, grading with
oracle completions, a real tiny Qwen3 end to end through the CLI, and the usage errors."""

from __future__ import annotations

import json
import os
import re
from fractions import Fraction

import pytest
from train_data import saved_curriculum_qwen3

from littlekit.cli import main
from littlekit.curriculum.answers import answer_kind, gold_value, grade
from littlekit.curriculum.export import write_jsonl
from littlekit.curriculum.formats import decimal_text, fraction_text, render, reverse_digits
from littlekit.curriculum.generate import generate, problem_seed
from littlekit.curriculum.units import all_units, select_units
from littlekit.evals import curriculum as ce

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

BAND_LINE = re.compile(r"^(accuracy|pass@\d+) (K5|BEYOND) = (\d\.\d{3}) \(n=(\d+)\)$", re.M)


def wrong_answer(gold: str) -> str:
    """Another answer of the gold's own kind (written as the curriculum writes answers)."""
    kind = answer_kind(gold)
    if kind == "comparison":
        return {"<": ">", ">": "=", "=": "<"}[gold]
    if kind == "set":
        return gold[:-1] + ", 99991]"
    value = gold_value(gold).value + 1
    return decimal_text(value) if kind == "decimal" else fraction_text(Fraction(value))


def oracle(records, answer=lambda record: record["answer"]):
    """complete(prompts, n): the record's training text after its prompt, with `answer(record)` as
    the answer (the gold one by default), rendered by the curriculum's own format function."""
    by_prompt = {ce.prompt(r): r for r in records}

    def complete(prompts, n_samples):
        out = []
        for text in prompts:
            r = by_prompt[text]
            full = render(r["statement"], r["steps"], answer(r), r["format"])
            assert full.startswith(text)
            out.append([full[len(text) :]] * n_samples)
        return out

    return complete


# --- the held-out rule ---------------------------------------------------------------------------


def test_held_out_seeds_never_are_training_seeds():
    units = [u.id for u in all_units()]
    training = {problem_seed(run, unit, i) for run in range(3) for unit in units for i in range(50)}
    held_out = {ce.held_out_seed(seed, unit, i) for seed in range(3) for unit in units for i in range(50)}
    assert len(held_out) == 3 * len(units) * 50  # distinct, and none a training seed
    assert not training & held_out
    assert ce.held_out_seed(0, "count_on", 0) == ce.held_out_seed(0, "count_on", 0)  # reproducible


def test_problems_in_a_training_file_are_redrawn(tmp_path):
    units = select_units("add_sub_within_20,compare_fractions,integer_addition_subtraction")
    drawn, none_dropped = ce.held_out_records(units, 6, seed=0, register="compact", fmt="plain")
    assert none_dropped == {u.id: 0 for u in units} and len(drawn) == 18
    # a training file: a mixture (prose register), two of the held-out problems among its records,
    # and a third inside a pretraining document's text
    mixture = generate(units, 30, seed=0, register="prose", fmt="scratchpad")
    copied = [{**drawn[0], "id": "copy-0"}, {**drawn[7], "id": "copy-1", "seed": 1}]
    document = {"id": "doc", "text": f"Some text.\n{drawn[13]['statement']}\nMore text."}
    path = tmp_path / "train.jsonl"
    write_jsonl([*mixture, *copied, document], path)
    training = ce.TrainingSet.read([path])
    records, excluded = ce.held_out_records(
        units, 6, seed=0, register="compact", fmt="plain", training=training
    )
    assert excluded == {units[0].id: 1, units[1].id: 1, units[2].id: 1}
    assert [sum(r["unit"] == u.id for r in records) for u in units] == [6, 6, 6]
    statements = {" ".join(r["statement"].split()) for r in records}
    assert not statements & training.statements
    assert not {r["seed"] for r in records} & training.seeds
    assert {drawn[0]["id"], drawn[7]["id"], drawn[13]["id"]}.isdisjoint(r["id"] for r in records)
    # a unit whose every candidate is in the training files yields nothing, and says how many went
    unit, tries = units[:1], 6 * ce.MAX_DRAWS_PER_PROBLEM
    everything = ce.TrainingSet(seeds=frozenset(ce.held_out_seed(0, unit[0].id, i) for i in range(tries)))
    assert ce.held_out_records(unit, 6, seed=0, training=everything) == ([], {unit[0].id: tries})


def test_a_training_file_that_is_not_jsonl_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"statement": "What is 1 + 1?"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl line 2: not JSON"):
        ce.TrainingSet.read([path])


# --- prompts, read-back and grading ------------------------------------------------------------


@pytest.fixture(scope="module")
def records_by_format():
    return {
        fmt: ce.held_out_records(all_units(), 2, seed=3, register=register, fmt=fmt)[0]
        for fmt, register in (("plain", "compact"), ("reversed", "prose"), ("scratchpad", "compact"))
    }


@pytest.mark.parametrize("fmt", ["plain", "reversed", "scratchpad"])
def test_the_prompt_is_the_training_text_up_to_the_answer(records_by_format, fmt):
    for record in records_by_format[fmt]:
        text = ce.prompt(record)
        assert record["text"].startswith(text) and record["format"] == fmt
        assert ce.read_prediction(record["text"][len(text) :], fmt) == record["answer"]
    assert ce.read_prediction(" 52.4\nWhat is", "reversed") == "4.25"  # digits back in order
    assert ce.read_prediction(" ", "plain") is None
    assert ce.read_prediction("3 + 4 = 7\n", "scratchpad") is None  # no Answer: line


@pytest.mark.parametrize("fmt", ["plain", "reversed", "scratchpad"])
def test_an_oracle_scores_one_and_a_wrong_oracle_zero(records_by_format, fmt):
    records = records_by_format[fmt]
    right = ce.evaluate(records, oracle(records), n_samples=2)
    assert (right["c"] == 2).all() and (right["n"] == 2).all()
    assert ce.band_lines(right) == ["accuracy K5 = 1.000 (n=82)", "accuracy BEYOND = 1.000 (n=32)"]
    assert (ce.accuracy_tables(right)["unit"]["pass_at_k"] == 1.0).all()
    wrong = ce.evaluate(records, oracle(records, lambda r: wrong_answer(r["answer"])))
    assert wrong["c"].sum() == 0
    assert ce.band_lines(wrong) == ["accuracy K5 = 0.000 (n=82)", "accuracy BEYOND = 0.000 (n=32)"]
    grades = ce.accuracy_tables(wrong)["grade"]
    assert grades["grade"].astype(str).tolist() == ["K", "1", "2", "3", "4", "5", "6", "7", "8"]


def test_a_reversed_answer_is_read_backwards(records_by_format):
    """A model trained on reversed answers that writes one in reading order is wrong, unless the
    answer reads the same both ways ("7", "1.10" -> "01.1"): the read-back un-reverses first."""
    records = records_by_format["reversed"]
    unreversed = oracle(records, lambda r: reverse_digits(r["answer"]))  # render reverses it back
    results = ce.evaluate(records, unreversed)
    both_ways = [grade("Answer: " + reverse_digits(r["answer"]), r["answer"]) for r in records]
    assert results["c"].astype(bool).tolist() == both_ways
    assert 0 < sum(both_ways) < len(records) / 2


def test_a_completer_must_answer_every_prompt(records_by_format):
    records = records_by_format["plain"][:3]
    with pytest.raises(ValueError, match="1 completion"):
        ce.evaluate(records, lambda prompts, n: [["7"]] * (len(prompts) - 1))


# --- the command, on a real tiny Qwen3 -----------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A random tiny Qwen3 over a BPE trained on curriculum texts, saved as save_pretrained."""
    return saved_curriculum_qwen3(tmp_path_factory.mktemp("model"), "reversed")


def test_the_command_prints_band_lines_tables_and_writes_records(model_dir, tmp_path, capsys):
    training = tmp_path / "mixture.jsonl"
    write_jsonl(generate(all_units(), 5, seed=0, fmt="reversed"), training)
    out = tmp_path / "results.jsonl"
    argv = ["eval", "curriculum", "--model", str(model_dir), "--band", "all", "--per-unit", "1",
            "--seed", "0", "--format", "reversed", "--exclude", str(training), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = BAND_LINE.findall(printed)
    assert [(label, band, int(n)) for label, band, _, n in lines] == [
        ("accuracy", "K5", 41),
        ("accuracy", "BEYOND", 16),
    ]
    assert "held out:" in printed and "grade" in printed and "count_on" in printed
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 57 and {r["unit"] for r in rows} == {u.id for u in all_units()}
    for _, band, value, _ in lines:
        mine = [r["c"] / r["n"] for r in rows if r["band"] == band]
        assert float(value) == pytest.approx(sum(mine) / len(mine), abs=5e-4)
    assert all(r["format"] == "reversed" and r["prompt"].endswith("\nReversed answer:") for r in rows)
    assert all(r["model"] == str(model_dir) and len(r["completions"]) == 1 for r in rows)

    argv = ["eval", "curriculum", "--model", str(model_dir), "--band", "beyond", "--per-unit", "1",
            "--format", "plain", "--samples", "2", "--max-new-tokens", "4"]  # fmt: skip
    assert main(argv) == 0
    sampled = BAND_LINE.findall(capsys.readouterr().out)
    assert [(label, band, int(n)) for label, band, _, n in sampled] == [
        ("accuracy", "BEYOND", 16),
        ("pass@2", "BEYOND", 16),
    ]


def test_usage_errors_are_one_line_before_any_model_loads(model_dir, tmp_path, capsys):
    existing = tmp_path / "old.jsonl"
    existing.write_text("keep\n", encoding="utf-8")
    empty = tmp_path / "empty"
    empty.mkdir()
    base = ["eval", "curriculum", "--model", str(model_dir)]
    cases = [
        ([*base, "--band", "K6"], "unknown band 'K6'; choose K5, BEYOND or all"),
        (["eval", "curriculum", "--model", str(tmp_path / "no" / "such" / "model")], "does not exist"),
        (["eval", "curriculum", "--model", str(empty)], "holds no config.json"),
        (["eval", "curriculum", "--model", "nobody/no-such-model"], "nor a Hub model in the local cache"),
        ([*base, "--out", str(existing)], "exists; pass --force"),
        ([*base, "--exclude", str(tmp_path / "missing.jsonl")], "is not a file"),
        ([*base, "--samples", "2", "--temperature", "0"], "needs --temperature > 0"),
        ([*base, "--format", "latex"], "invalid choice: 'latex'"),
        (["eval", "curriculum"], "--model"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)
    assert existing.read_text(encoding="utf-8") == "keep\n"
    assert main(["eval"]) == 2 and "curriculum" in capsys.readouterr().err


def test_evaluate_models_stacks_each_model_on_the_same_problems(model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    records, _ = ce.held_out_records(select_units("add_sub_within_10,negative_results"), 2, fmt="reversed")
    pair = (AutoModelForCausalLM.from_pretrained(model_dir), AutoTokenizer.from_pretrained(model_dir))
    stacked = ce.evaluate_models({"a": pair, "b": pair}, records, "reversed", max_new_tokens=4)
    assert list(stacked["model"]) == ["a"] * 4 + ["b"] * 4
    alone = ce.evaluate(records, ce.model_completer(*pair, "reversed", max_new_tokens=4))
    assert list(stacked.loc[stacked["model"] == "b", "completions"]) == list(alone["completions"])
