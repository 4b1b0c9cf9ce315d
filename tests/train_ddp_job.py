"""`littlekit train` runs for the 2-process test (tests/lm/test_train_ddp.py), started under torchrun.

    torchrun --standalone --nproc_per_node 2 tests/train_ddp_job.py OUT_DIR -- TRAIN_ARGS...

Each worker runs, through the CLI, with TRAIN_ARGS plus:
  OUT_DIR/ddp    --parallel ddp  (the whole run)
  OUT_DIR/fsdp   --parallel fsdp --stop-at 2, then again with --resume auto (the rest)
The first run joins the process group itself, as under `littlekit launch`'s script; the others reuse it.
"""

from __future__ import annotations

import sys

import torch

from littlekit.cli import main


def run(argv: list[str]) -> None:
    code = main(["train", *argv])
    if code != 0:
        raise SystemExit(f"littlekit train {' '.join(argv)} exited {code}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    out, separator, *train_args = sys.argv[1:]
    assert separator == "--", "usage: train_ddp_job.py OUT_DIR -- TRAIN_ARGS..."
    run([*train_args, "--parallel", "ddp", "--run-dir", f"{out}/ddp"])
    run([*train_args, "--parallel", "fsdp", "--run-dir", f"{out}/fsdp", "--stop-at", "2"])
    run([*train_args, "--parallel", "fsdp", "--run-dir", f"{out}/fsdp", "--resume", "auto"])
