"""`littlekit filter` against a hostile-but-fair user, third round: --force deleting the input
and files it never wrote, datatrove folder input skipping or doubling files, --tasks far past the
input files, and the small ones (mostly unreadable input exiting 0, NaN in kept JSONL, gzip named
.jsonl, bare EOFError from a datatrove read, filter_config.json's duplicate keys and max_aoa past
the released rule, --aoa-table dropping the config's max_aoa unsaid, negative AoA ages, --stages
all naming one missing model of two, Parquet ids turned into strings unsaid under --quiet).

Each test runs `littlekit.cli.main([...])` on small real inputs made in tmp_path, as
tests/filter/test_filter_output_folders_and_input_errors.py does; the datatrove runs are real
local runs.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_filter_output_folders_and_input_errors import one_line, run_cli, shard_rows, tree, write_jsonl

from littlekit.filter import registry
from littlekit.filter.base import Decision, Stage, StageSpec
from littlekit.filter.datatrove.pipeline import check_apart
from littlekit.filter.datatrove.readers import make_reader

os.environ.setdefault("HF_HUB_OFFLINE", "1")

EASY = ["the cat sat on the mat", "the dog ran home", "we play with the big red ball"]
DATATROVE = ["--executor", "local", "--workers", "1", "--quiet"]


def rows_of(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}{i}", "text": EASY[i % len(EASY)]} for i in range(n)]


def ours(err: str) -> str:
    """littlekit's own lines of stderr, as one line (datatrove's log lines left out)."""
    return one_line(" ".join(line for line in err.splitlines() if line.startswith("littlekit filter:")))


def datatrove_run(capsys, inp: Path, out: Path, logs: Path, *extra: Any) -> tuple[int, str, str]:
    return run_cli(
        capsys, "filter", "--in", inp, "--out", out, "--logging-dir", logs, "--stages", "aoa", *DATATROVE,
        *extra,
    )  # fmt: skip


def four_shards(folder: Path, per_shard: int = 3) -> Path:
    for shard in range(4):
        write_jsonl(folder / f"part-{shard}.jsonl", rows_of(f"s{shard}-", per_shard))
    return folder


def report_of(logs: Path) -> dict:
    return json.loads((logs / "report.json").read_text(encoding="utf-8"))


# --- 1. --force never deletes the input, nor files no run wrote ----------------------------------


def test_an_out_folder_holding_the_input_is_refused_and_nothing_is_deleted(tmp_path, capsys):
    """The reported case: `--in home/in/ --out home/ --force` replaced home/ as a whole, the input
    and an unrelated notes.txt with it. An --out that contains --in (folder or file) is refused."""
    home = tmp_path / "home"
    four_shards(home / "in")
    (home / "notes.txt").write_text("mine\n", encoding="utf-8")
    before = tree(tmp_path)
    for inp in (home / "in", home / "in" / "part-0.jsonl"):
        code, _, err = datatrove_run(capsys, inp, home, tmp_path / "logs", "--force")
        assert code == 2, err
        assert f"the input {inp} is inside the output folder {home}" in ours(err)
        assert tree(tmp_path) == before  # refused before anything was written


def test_a_logging_dir_or_report_inside_the_output_folder_is_refused(tmp_path, capsys):
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    code, _, err = datatrove_run(capsys, inp, kept, kept / "logs")
    assert code == 2 and f"the logging directory {kept / 'logs'} is inside the output folder" in ours(err)
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs", "--report", kept / "report.json")
    assert code == 2 and f"--report {kept / 'report.json'} is inside --out {kept}" in ours(err)
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs", "--rejected", kept / "rejected")
    assert code == 2 and "is inside the output folder" in ours(err)
    assert not kept.exists()
    with pytest.raises(ValueError, match="is inside the output folder"):
        check_apart(inp, kept, kept / "rejected")


def test_force_refuses_a_folder_holding_files_no_run_wrote(tmp_path, capsys):
    """--force replaced any other run's folder as a whole, whatever else was in it; it now replaces
    a folder of littlekit output only, and says which files stop it."""
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs4", "--tasks", "4")[0] == 0
    (kept / "notes.txt").write_text("mine\n", encoding="utf-8")
    before = tree(tmp_path)
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs2", "--tasks", "2", "--force")
    assert code == 2, err
    message = ours(err)
    assert f"output folder {kept} holds files that are not littlekit output (notes.txt)" in message
    assert "never removes anything else" in message
    assert tree(tmp_path) == before

    (kept / "notes.txt").unlink()  # only the other run's shards and marker: replaced
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs2", "--tasks", "2", "--force")
    assert code == 0, err
    assert sorted(p.name for p in kept.glob("*.jsonl.gz")) == ["00000.jsonl.gz", "00001.jsonl.gz"]


def test_force_refuses_a_folder_without_a_marker(tmp_path, capsys):
    """Shards with no .littlekit_output.json: nothing says a littlekit run wrote them."""
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "00000.jsonl.gz").write_bytes(gzip.compress(b'{"id": "theirs", "text": "x"}\n'))
    before = tree(tmp_path)
    code, _, err = datatrove_run(capsys, inp, kept, tmp_path / "logs", "--force")
    assert code == 2, err
    message = ours(err)
    assert "holds files that are not littlekit output (00000.jsonl.gz) and no .littlekit_output.json" in (
        message
    )
    assert tree(tmp_path) == before


class IntruderStage(Stage):
    """Keeps every document and, while the run goes on, puts a file of its own in the output folder
    (someone saving notes there mid-run)."""

    name = "intruder"
    target: Path | None = None

    def score(self, text: str) -> dict[str, Any]:
        assert self.target is not None
        self.target.write_text("written during the run\n", encoding="utf-8")
        return {}

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(True, None, scores)


def test_a_file_put_in_the_old_folder_during_a_forced_run_stops_the_swap(tmp_path, capsys, monkeypatch):
    inp = four_shards(tmp_path / "in")
    kept = tmp_path / "kept"
    assert datatrove_run(capsys, inp, kept, tmp_path / "logs4", "--tasks", "4")[0] == 0
    old = tree(kept)
    IntruderStage.target = kept / "notes.txt"
    monkeypatch.setitem(
        registry._SPECS,
        "intruder",
        StageSpec("intruder", 100, "intruder", "test", lambda options: IntruderStage()),
    )
    code, _, err = run_cli(
        capsys, "filter", "--in", inp, "--out", kept, "--logging-dir", tmp_path / "logs2", "--stages",
        "intruder", "--tasks", "2", "--force", *DATATROVE,
    )  # fmt: skip
    assert code != 0 and "holds files that are not littlekit output (notes.txt)" in ours(err)
    assert (kept / "notes.txt").is_file()
    assert {name: digest for name, digest in tree(kept).items() if name != "notes.txt"} == old
    assert sorted(p.name for p in (tmp_path / "kept.partial").glob("*.jsonl.gz")) == [
        "00000.jsonl.gz",
        "00001.jsonl.gz",
    ]


# --- 2. a folder is read whole, and only its input files ----------------------------------------


def mixed_folder(folder: Path) -> Path:
    """a.jsonl, b.ndjson, c.parquet (50 records each) and two files that are not input."""
    write_jsonl(folder / "a.jsonl", rows_of("a", 50))
    write_jsonl(folder / "b.ndjson", rows_of("b", 50))
    pd.DataFrame(rows_of("c", 50)).to_parquet(folder / "c.parquet")
    write_jsonl(folder / "a.jsonl.partial", rows_of("partial", 30))
    write_jsonl(folder / "a.jsonl.bak", rows_of("bak", 40))
    return folder


def test_a_folder_of_mixed_formats_is_read_whole_and_nothing_else(tmp_path, capsys):
    """The reported case: the reader globbed *.parquet when any existed, else *.jsonl*, so this
    folder read 50 of its 150 records, never .ndjson, and .partial/.bak files as input."""
    inp = mixed_folder(tmp_path / "in")
    code, _, err = datatrove_run(capsys, inp, tmp_path / "kept", tmp_path / "logs", "--tasks", "3")
    assert code == 0, err
    report = report_of(tmp_path / "logs")
    assert report["read"] == report["kept"] == 150
    ids = sorted(row["id"] for row in shard_rows(tmp_path / "kept"))
    assert ids == sorted(f"{p}{i}" for p in "abc" for i in range(50))
    assert "2 file(s) in --in" in ours(err) and "are not read" in ours(err)
    assert "a.jsonl.bak, a.jsonl.partial" in ours(err)


def test_the_reader_and_the_command_share_one_rule_for_a_folders_input(tmp_path):
    from littlekit.filter.paths import folder_files  # here: the one rule this round added

    inp = mixed_folder(tmp_path / "in")
    write_jsonl(inp / "sub" / "d.jsonl", rows_of("d", 2))
    (inp / ".hidden.jsonl").write_text('{"id": "h", "text": "x"}\n', encoding="utf-8")
    files, skipped = folder_files(inp)
    assert files == ["a.jsonl", "b.ndjson", "c.parquet", "sub/d.jsonl"]
    assert skipped == ["a.jsonl.bak", "a.jsonl.partial"]
    assert make_reader(inp).files == files
    assert folder_files(inp, "parquet")[0] == ["c.parquet"]
    one = make_reader(inp / "a.jsonl")  # one file: that file, not every *a.jsonl beside it
    assert one.files == ["a.jsonl"]
    documents = list(make_reader(inp).run())
    assert len(documents) == 152


def test_a_folder_without_input_files_is_refused(tmp_path, capsys):
    inp = tmp_path / "in"
    write_jsonl(inp / "a.jsonl.bak", rows_of("bak", 2))
    code, _, err = datatrove_run(capsys, inp, tmp_path / "kept", tmp_path / "logs")
    assert code == 2 and f"--in {inp} holds no input files" in ours(err) and "a.jsonl.bak" in ours(err)
    assert not (tmp_path / "kept").exists()


# --- 11. --tasks at most the number of input files ----------------------------------------------


def test_tasks_past_the_input_files_are_cut_to_them_with_a_warning(tmp_path, capsys):
    """--tasks 100000 over 4 files ran about 27 minutes of empty tasks, saying nothing."""
    inp = four_shards(tmp_path / "in")
    code, _, err = datatrove_run(capsys, inp, tmp_path / "kept", tmp_path / "logs", "--tasks", "100000")
    assert code == 0, err
    message = ours(err)
    assert "--tasks 100,000 is more than the 4 input file(s)" in message and "running 4 task(s)" in message
    assert sorted(p.name for p in (tmp_path / "logs" / "completions").iterdir()) == [
        "00000",
        "00001",
        "00002",
        "00003",
    ]
    manifest = json.loads((tmp_path / "logs" / "littlekit_run.json").read_text(encoding="utf-8"))
    assert manifest["tasks"] == 4 and report_of(tmp_path / "logs")["kept"] == 12


# --- the small ones ------------------------------------------------------------------------------


def test_an_input_mostly_unreadable_fails_rather_than_exiting_0(tmp_path, capsys):
    """990 of 1,000 lines not JSON exited 0 (input errors did not count toward any limit)."""
    source = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": i, "text": EASY[0]}) if i % 100 == 0 else "not json" for i in range(1000)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept = tmp_path / "kept.jsonl"
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", kept, "--stages", "aoa", "--quiet")
    assert code == 1, err
    message = ours(err)
    assert "990 of the 1,000 records read could not be read as documents (99.0%, over the 0.5 allowed" in (
        message
    )
    assert not kept.exists()
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", kept, "--stages", "aoa", "--quiet", "--max-error-rate", "1"
    )
    assert code == 0 and "warning: 990 of the 1,000 records" in ours(err)

    folder = tmp_path / "in"  # the datatrove run: not swapped in, exit 1
    folder.mkdir()
    (folder / "docs.jsonl").write_bytes(source.read_bytes())
    code, _, err = datatrove_run(capsys, folder, tmp_path / "kept", tmp_path / "logs")
    assert code == 1 and "990 of the 1,000 records read could not be read as documents" in ours(err)


def test_nan_and_infinity_are_written_as_null_in_kept_jsonl(tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "a", "text": "the cat sat", "score": NaN, "s": [Infinity, 1.5]}\n', "utf-8")
    kept = tmp_path / "kept.jsonl"
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", kept, "--stages", "aoa", "--quiet")
    assert code == 0, err

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")

    (row,) = [json.loads(line, parse_constant=refuse) for line in kept.read_text("utf-8").splitlines()]
    assert (row["score"], row["s"]) == (None, [None, 1.5])


def test_mixed_type_ids_in_parquet_output_are_said_with_quiet_too(tmp_path, capsys):
    source = write_jsonl(tmp_path / "docs.jsonl", [{"id": 1, "text": EASY[0]}, {"id": "b", "text": EASY[1]}])
    out = tmp_path / "kept.parquet"
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", out, "--stages", "aoa", "--quiet")
    assert code == 0, err
    assert pq.read_table(out).column("id").to_pylist() == ["1", "b"]
    message = ours(err)
    assert "warning: kept.parquet: Parquet holds one type per column" in message and "id (int/str)" in message


def test_gzip_data_named_jsonl_is_refused_naming_the_fix(tmp_path, capsys):
    """Read as text, every line was reported unreadable, one by one, without a hint."""
    source = tmp_path / "docs.jsonl"
    source.write_bytes(gzip.compress(b'{"id": "a", "text": "the cat sat"}\n'))
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", tmp_path / "k.jsonl", "--stages", "aoa")
    assert code == 2 and "is gzip-compressed but its name does not end in .gz" in ours(err)
    assert "rename it to docs.jsonl.gz" in ours(err)
    folder = tmp_path / "in"
    folder.mkdir()
    os.replace(source, folder / "docs.jsonl")
    code, _, err = datatrove_run(capsys, folder, tmp_path / "kept", tmp_path / "logs")
    assert code == 2 and f"{folder / 'docs.jsonl'} is gzip-compressed" in ours(err)
    assert not (tmp_path / "kept").exists()


def test_a_damaged_file_in_a_datatrove_run_is_named(tmp_path, capsys):
    """A cut-short gzip ended the run with a bare `EOFError: Compressed file ended before the
    end-of-stream marker was reached`, a damaged Parquet file with ArrowInvalid: no file named."""
    folder = tmp_path / "in"
    folder.mkdir()
    data = gzip.compress("".join(json.dumps(row) + "\n" for row in rows_of("a", 2000)).encode())
    (folder / "a.jsonl.gz").write_bytes(data[: len(data) // 2])
    code, _, err = datatrove_run(capsys, folder, tmp_path / "kept", tmp_path / "logs")
    message = ours(err)
    assert code == 1 and f"input file {folder / 'a.jsonl.gz'} cannot be read on, after" in message
    assert "gzip data is cut short or damaged" in message and "littlekit: error: EOFError" not in err

    broken = tmp_path / "broken"
    broken.mkdir()
    pq.write_table(pa.table({"id": ["x"], "text": [EASY[0]]}), broken / "b.parquet")
    (broken / "b.parquet").write_bytes((broken / "b.parquet").read_bytes()[:-20])
    code, _, err = datatrove_run(capsys, broken, tmp_path / "kept2", tmp_path / "logs2")
    assert code == 1 and f"input file {broken / 'b.parquet'} cannot be read on" in ours(err)
    assert "not a whole Parquet file" in ours(err)


def aoa_artifacts(root: Path, config: str) -> Path:
    (root / "data").mkdir(parents=True)
    pd.DataFrame({"word": ["the", "cat", "sat", "on", "mat"], "aoa": [2.0, 3.0, 4.0, 2.5, 5.0]}).to_parquet(
        root / "data" / "aoa.parquet"
    )
    (root / "filter_config.json").write_text(config, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "config, problem",
    [
        ('{"max_aoa": 10, "max_aoa": 11}', "key 'max_aoa' is given twice"),
        ('{"max_aoa": 13}', "max_aoa must be a number of years in (0, 12] or null, got 13"),
    ],
)
def test_filter_config_refuses_duplicate_keys_and_a_max_aoa_past_the_released_rule(
    tmp_path, capsys, config, problem
):
    root = aoa_artifacts(tmp_path / "artifacts", config)
    source = write_jsonl(tmp_path / "docs.jsonl", rows_of("a", 2))
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", tmp_path / "k.jsonl", "--stages", "aoa",
        "--artifacts", root,
    )  # fmt: skip
    assert code == 2 and problem in ours(err) and "filter_config.json" in ours(err)


def test_aoa_table_says_the_config_max_aoa_it_leaves_out(tmp_path, capsys):
    root = aoa_artifacts(tmp_path / "artifacts", '{"max_aoa": 10}')
    table = tmp_path / "mine.csv"
    table.write_text("word,aoa\nthe,2\ncat,3\nsat,4\non,2\nmat,5\n", encoding="utf-8")
    source = write_jsonl(tmp_path / "docs.jsonl", rows_of("a", 2))
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", f"{tmp_path}/run/", "--stages", "aoa", "--artifacts", root,
        "--aoa-table", table, "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert "--aoa-table replaces the aoa stage's file of --artifacts" in ours(err)
    message = ours(err)
    assert "filter_config.json's max_aoa 10 (chosen with that file) is not applied" in message
    assert "pass --max-aoa 10 to apply it" in message
    assert json.loads((tmp_path / "run" / "report.json").read_text())["run"]["options"]["max_aoa"] == 12.0


def test_an_aoa_table_with_negative_ages_is_refused(tmp_path, capsys):
    table = tmp_path / "neg.csv"
    table.write_text("word,aoa\nthe,2\ncat,-3\nsat,4\n", encoding="utf-8")
    source = write_jsonl(tmp_path / "docs.jsonl", rows_of("a", 2))
    code, _, err = run_cli(
        capsys, "filter", "--in", source, "--out", tmp_path / "k.jsonl", "--stages", "aoa",
        "--aoa-table", table,
    )  # fmt: skip
    assert code == 2 and f"AoA table {table} has 1 negative ages (years), e.g. ['cat -3']" in ours(err)


def test_stages_all_without_artifacts_names_every_missing_model(tmp_path, capsys):
    source = write_jsonl(tmp_path / "docs.jsonl", rows_of("a", 2))
    code, _, err = run_cli(capsys, "filter", "--in", source, "--out", tmp_path / "k.jsonl", "--stages", "all")
    message = ours(err)
    assert code == 2 and err.count("\n") == 1
    assert "stage 'fasttext' needs fasttext_model (command line: --fasttext-model PATH)" in message
    assert "stage 'encoder' needs encoder_model (command line: --encoder-model PATH)" in message
    assert not (tmp_path / "k.jsonl").exists()
