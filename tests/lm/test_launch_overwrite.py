"""`littlekit launch` never replaces its script unasked (issue 26): an existing --out is refused
without --overwrite and then replaced whole; --force stays the trainer's flag; an --out that is a
folder is refused and a dry run writes nothing. Each runs `littlekit.cli.main([...])` in tmp_path.
"""

from __future__ import annotations

import os
from pathlib import Path

from littlekit.cli import main


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


# --- launch does not replace its script unasked ------------------------------------------------


def launch_argv(out: Path, *extra) -> list:
    return ["launch", "--size", "5B", "--tokens", "80B", "--data", "/shards/k5", "--tokenizer", "/tok",
            "--out", out, *extra]  # fmt: skip


def test_launch_refuses_an_existing_script_without_overwrite(tmp_path, capsys):
    out = tmp_path / "job.sbatch"
    code, _, err = run_cli(capsys, *launch_argv(out))
    assert code == 0, err
    first = out.read_text(encoding="utf-8")
    out.write_text("#!/bin/bash\n# edited by hand\n", encoding="utf-8")
    code, printed, err = run_cli(capsys, *launch_argv(out, "--nodes", "2"))
    assert code == 2 and f"--out {out} exists; pass --overwrite to replace it" in err, err
    assert "wrote" not in printed
    assert out.read_text(encoding="utf-8") == "#!/bin/bash\n# edited by hand\n"
    code, _, err = run_cli(capsys, *launch_argv(out, "--overwrite"))
    assert code == 0, err
    assert out.read_text(encoding="utf-8") == first and os.access(out, os.X_OK)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]  # nothing left beside it
    # --force stays the trainer's flag, passed on to `littlekit train`, not an overwrite
    code, _, err = run_cli(capsys, *launch_argv(out, "--force"))
    assert code == 2 and "--overwrite" in err, err
    code, _, err = run_cli(capsys, *launch_argv(out, "--force", "--overwrite"))
    assert code == 0 and " --force" in out.read_text(encoding="utf-8"), err


def test_launch_out_folder_and_dry_run(tmp_path, capsys):
    code, _, err = run_cli(capsys, *launch_argv(tmp_path))
    assert code == 2 and f"--out {tmp_path} is a folder" in err, err
    out = tmp_path / "job.sbatch"
    out.write_text("keep\n", encoding="utf-8")
    code, printed, err = run_cli(capsys, *launch_argv(out, "--dry-run"))
    assert code == 0 and "nothing written" in printed, err  # a dry run writes nothing, so refuses nothing
    assert out.read_text(encoding="utf-8") == "keep\n"
