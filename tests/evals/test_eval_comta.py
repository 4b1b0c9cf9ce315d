"""CoMTA loader, student-turn scoring and categories, on a project-written fixture of CoMTA's shape
(CoMTA itself may not be redistributed) and a real tiny Qwen3 and tokenizer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from train_data import nano_lm

from littlekit.evals.comta import (
    CoMTAFormatError,
    bootstrap_gaps,
    comta_bpb,
    dialogue_counts,
    group_bpb,
    load_comta,
    score_turns,
    split_gaps,
    student_turns,
)
from littlekit.lm.sizes import build_model

FIXTURE = Path(__file__).parents[1] / "fixtures" / "comta" / "CoMTA_fixture.json"
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def dialogues() -> list[dict]:
    return load_comta(FIXTURE)


def test_fixture_loads_and_counts_add_up(dialogues):
    assert len(dialogues) == 7
    counts = dialogue_counts(dialogues)
    assert counts["dialogues"].sum() == len(dialogues)
    assert counts.loc["Geometry", "split"] == "excluded" and counts.loc["Geometry", "dialogues"] == 1
    assert counts.loc["Elementary", "split"] == "K-5"
    assert set(counts.loc[["Algebra", "Trigonometry", "Calculus"], "split"]) == {"Beyond K-5"}
    assert counts.loc["Elementary", "empty_student_turns"] == 1
    all_turns = sum(len(d["data"]) for d in dialogues)
    assert (
        counts["student_turns"] + counts["empty_student_turns"] + counts["tutor_turns"]
    ).sum() == all_turns
    turns = student_turns(dialogues)
    scored = counts.drop(index="Geometry")
    assert len(turns) == scored["student_turns"].sum() == 15
    assert turns.groupby("math_level").size().to_dict() == scored["student_turns"][lambda s: s > 0].to_dict()


def test_student_turns_are_conditioned_on_the_dialogue_so_far(dialogues):
    turns = student_turns(dialogues)
    assert "Geometry" not in set(turns["math_level"])
    first = turns.iloc[0]
    assert first["context"] == "Student:" and first["text"].startswith(" I have 3 bags")
    second = turns.iloc[1]
    assert second["context"] == (
        "Student: I have 3 bags with 4 apples in each bag. How many apples do I have?\n\n"
        "Tutor: Good question! How could you find the total of 3 groups of 4?\n\nStudent:"
    )
    assert second["text"] == " I can add 4 + 4 + 4. That is 12."
    opens_with_tutor = turns[turns["test_id"] == "fixture-algebra-2"].iloc[0]
    assert opens_with_tutor["context"].startswith("Tutor: Let's factor") and opens_with_tutor["turn"] == 1
    assert (turns["text"].map(lambda t: len(t.encode())) == turns["content_bytes"] + 1).all()
    trig = turns[turns["math_level"] == "Trigonometry"].iloc[0]
    assert trig["content_bytes"] == len("What is sin(30°)? I think it is √3/2.".encode())


def write(tmp_path: Path, payload, raw: bytes | None = None) -> Path:
    path = tmp_path / "CoMTA_dataset.json"
    path.write_bytes(raw if raw is not None else json.dumps(payload).encode("utf-8"))
    return path


def good(**changes) -> dict:
    dialogue = {
        "test_id": "x",
        "math_level": "Algebra",
        "expected_result": "Answer Accepted",
        "data": [{"role": "user", "content": "2x = 4"}],
    }
    return {**dialogue, **changes}


@pytest.mark.parametrize(
    "payload,message",
    [
        ({"dialogues": []}, "expected a JSON list of dialogues, got a dict"),
        ([good(), "text"], "dialogue 1 is a str"),
        ([good(), good(), {"test_id": 1, "math_level": "Algebra", "data": []}], "dialogue 2 lacks field"),
        ([good(math_level="Statistics")], "dialogue 0: unknown math_level 'Statistics'"),
        ([good(), good(data={"role": "user"})], "dialogue 1: data is a dict"),
        ([good(data=[{"role": "teacher", "content": "hi"}])], "dialogue 0, turn 0: unknown role 'teacher'"),
        ([good(data=[{"role": "user", "content": "a"}, {"role": "user"}])], "dialogue 0, turn 1: expected"),
        ([good(data=[{"role": "user", "content": 4}])], "dialogue 0, turn 0: content is a int"),
    ],
)
def test_malformed_files_name_the_dialogue_and_field(tmp_path, payload, message):
    with pytest.raises(CoMTAFormatError, match=message) as err:
        load_comta(write(tmp_path, payload))
    assert "CoMTA_dataset.json" in str(err.value)


def test_encoding_json_and_missing_file_errors(tmp_path):
    latin1 = json.dumps([good(data=[{"role": "user", "content": "30°"}])], ensure_ascii=False).encode(
        "latin-1"
    )
    with pytest.raises(CoMTAFormatError, match=r"not UTF-8 \(byte \d+"):
        load_comta(write(tmp_path, None, raw=latin1))
    with pytest.raises(CoMTAFormatError, match="not valid JSON \\(line 2"):
        load_comta(write(tmp_path, None, raw=b"[\n{,]"))
    with pytest.raises(FileNotFoundError, match="tutoring-accuracy-dataset"):
        load_comta(tmp_path / "absent.json")


@pytest.fixture(scope="module")
def tiny_lm(dialogues):
    texts = [t["content"] for d in dialogues for t in d["data"]] * 3
    return nano_lm(texts, vocab_size=320)


@torch.no_grad()
def direct_nats(model, tokenizer, context: str, text: str) -> float:
    """Σ -log p(text token | BOS, context tokens, earlier text tokens), one unpadded forward pass."""
    head = tokenizer(context, add_special_tokens=False)["input_ids"]
    body = tokenizer(text, add_special_tokens=False)["input_ids"]
    ids = [tokenizer.bos_token_id, *head, *body]
    logp = torch.log_softmax(model(torch.tensor([ids])).logits[0, :-1].double(), dim=-1)
    targets = torch.tensor(ids[1:])[:, None]
    return -logp.gather(1, targets)[len(head) :].sum().item()


def test_bpb_by_category_and_split_is_recomputed_independently(dialogues, tiny_lm):
    model, tokenizer = tiny_lm
    results = comta_bpb({"tiny": tiny_lm}, dialogues, batch_size=3)
    turns = student_turns(dialogues)
    turns["nats"] = [
        direct_nats(model, tokenizer, c, t) for c, t in zip(turns["context"], turns["text"], strict=True)
    ]
    turns["bytes"] = turns["text"].map(lambda t: len(t.encode("utf-8")))
    by_group = {(r.level, r.group): r for r in results.itertuples()}
    assert set(by_group) == {
        ("category", "Elementary"),
        ("category", "Algebra"),
        ("category", "Trigonometry"),
        ("category", "Calculus"),
        ("split", "K-5"),
        ("split", "Beyond K-5"),
    }
    for (level, group), row in by_group.items():
        part = turns[turns["math_level" if level == "category" else "split"] == group]
        assert row.turns == len(part) and row.dialogues == part["dialogue"].nunique()
        assert row.bytes == part["bytes"].sum() == (part["content_bytes"] + 1).sum()
        assert row.nats == pytest.approx(part["nats"].sum(), rel=1e-5)
        assert row.bpb == pytest.approx(part["nats"].sum() / (math.log(2) * part["bytes"].sum()), rel=1e-5)
    categories = results[results["level"] == "category"]
    splits = results[results["level"] == "split"].set_index("group")
    assert categories["turns"].sum() == splits["turns"].sum() == len(turns)
    beyond = categories[categories["group"] != "Elementary"]
    assert splits.loc["Beyond K-5", "bytes"] == beyond["bytes"].sum()
    gaps = split_gaps(results)
    assert gaps.loc["tiny", "beyond_minus_k5"] == pytest.approx(
        splits.loc["Beyond K-5", "bpb"] - splits.loc["K-5", "bpb"]
    )


def test_context_changes_the_score(dialogues, tiny_lm):
    """The dialogue so far conditions each turn: scoring a turn without it gives other nats."""
    model, tokenizer = tiny_lm
    one = [dialogues[0]]
    turns = student_turns(one)
    scored = comta_bpb({"tiny": tiny_lm}, one).set_index("group").loc["Elementary", "nats"]
    with_context = sum(
        direct_nats(model, tokenizer, c, t) for c, t in zip(turns["context"], turns["text"], strict=True)
    )
    without = sum(direct_nats(model, tokenizer, "Student:", t) for t in turns["text"])
    assert scored == pytest.approx(with_context, rel=1e-5)
    assert abs(with_context - without) > 1e-3 * without


def test_only_geometry_means_nothing_to_score(dialogues):
    geometry = [d for d in dialogues if d["math_level"] == "Geometry"]
    assert student_turns(geometry).empty
    with pytest.raises(ValueError, match="no student turn"):
        comta_bpb({"tiny": None}, geometry)
    with pytest.raises(ValueError, match="no models"):
        comta_bpb({}, dialogues)


def test_bootstrap_of_the_gap_is_paired_over_dialogues(dialogues, tiny_lm):
    model, tokenizer = tiny_lm
    twin = build_model(model.config).eval()
    twin.load_state_dict(model.state_dict())
    other = build_model(model.config).eval()
    models = {"tiny": tiny_lm, "twin": (twin, tokenizer), "other": (other, tokenizer)}
    scored = score_turns(models, dialogues)
    assert len(scored) == 3 * len(student_turns(dialogues))
    gaps = split_gaps(group_bpb(scored))
    boot = bootstrap_gaps(scored, n_boot=200, seed=0)
    for name in models:
        assert boot.loc[name, "gap"] == pytest.approx(gaps.loc[name, "beyond_minus_k5"], rel=1e-9)
        assert boot.loc[name, "ci_low"] < boot.loc[name, "gap"] < boot.loc[name, "ci_high"]
    same = boot.loc["tiny - twin"]
    assert abs(same["ci_low"]) < 1e-9 and abs(same["ci_high"]) < 1e-9, "identical models: paired difference 0"
    assert boot.loc["tiny - other", "ci_high"] - boot.loc["tiny - other", "ci_low"] > 1e-3
    assert bootstrap_gaps(scored, n_boot=30, seed=1).equals(bootstrap_gaps(scored, n_boot=30, seed=1))
    with pytest.raises(ValueError, match="both splits"):
        bootstrap_gaps(scored[scored["split"] == "K-5"])
