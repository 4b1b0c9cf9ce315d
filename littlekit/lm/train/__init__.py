"""`littlekit train`: pretraining a Qwen3 model on packed token shards, on one CPU or many GPUs.

    littlekit train --data shards/k5 --val-data shards/val --tokenizer tok/ --size nano \\
        --seq-len 256 --global-batch 32 --micro-batch 8 --max-steps 2000 --run-dir runs/nano
    torchrun --nproc_per_node 8 -m littlekit.cli train ... --parallel fsdp   # as `littlekit launch` writes

The loop: each optimizer step takes `global_batch` sequences of `seq_len` tokens from the
BOS-aligned `shards.BatchLoader` (one source, several weighted ones, or a named mixture such as
the paper's cool-off mix), split over the processes (`micro_batch` each per forward/backward)
and gradient accumulation. Loss is the mean next-token cross-entropy over every token of the
global batch, computed in fp32 (in one fp32 process the LM head and the loss are fused,
`linear_cross_entropy`: the same loss without the full logits tensor). Muon updates the 2-D
hidden matrices and AdamW the embeddings, norms and head (`littlekit.lm.optim`), both under the
warmup-stable-cool-off schedule, after clipping the global gradient norm. On a GPU the forward
runs under bf16 autocast (fp32 weights and optimizer state); on the CPU in fp32, seeded and
deterministic.

Processes: started by torchrun (WORLD_SIZE > 1) the trainer joins the process group (nccl on
GPUs, gloo on CPUs) unless the caller already did, leaves it up for later calls, and wraps the
model in DDP (default) or FSDP2 `fully_shard` (each decoder layer, then the root). The loader
hands rank r its contiguous share of each global batch, so N processes see the same rows per step
as one process accumulating them.

Every `eval_every` steps (and at the start and the end) validation bits per byte is measured on
the held-out stream of `val_data` (`shards.eval_batches`, split over ranks, Σ nats / (ln 2 · Σ
bytes) from the shards' byte counts); the checkpoint with the lowest value is kept in `best/`.
`last/` is written every `save_every` steps and at the end, swapped in whole (while it is, the
previous one is `last.old/`, which `resume="auto"` takes when `last/` is missing). A step whose loss
or gradient norm is not finite stops the run (`TrainingDiverged`) and nothing of it is saved; the
non-finite numbers of its metrics record are written as null. `littlekit train` refuses a fresh
run in a run directory that holds one (last/, best/, metrics.jsonl) unless `--force`, but starts
fresh, saying so, where it holds no checkpoint and the metrics.jsonl of a run that failed before its
last step; a fresh run there writes its train_config.json and metrics.jsonl beside the old ones
(`name.new`) and replaces the old run's files only once its own first checkpoint is complete. A save
that fails (a full disk) removes its `name.tmp/` and leaves the previous checkpoint as it was.
Resuming refuses (`CheckpointError`) a checkpoint saved with another --global-batch, --seq-len,
--seed or --optimizer (`KEPT_ON_RESUME`: tokens per step, data order, optimizer state) or other
data, and one whose weights or optimizer state are not finite; --max-steps, --stop-at, the
schedule, --micro-batch and the number of processes may change. While a run runs, rank 0 holds
its run directory (`littlekit.swap.hold_output`, the lock file `.NAME.lock` beside it): a second
run into it is refused, naming the first one's pid. A checkpoint directory holds the
model in `save_pretrained` format (config.json, model.safetensors), the tokenizer, and
`trainer_state.pt` (optimizer, step, loader position, RNG; `last/` only) with a readable
`trainer_state.json`, so `AutoModelForCausalLM.from_pretrained` and
`AutoTokenizer.from_pretrained` load it and `resume` continues the run exactly. `metrics.jsonl`
in the run directory gets one record per logged step: step, tokens, loss, lr, lr_muon,
grad_norm, tokens_per_s (the global batch's tokens over rank 0's seconds), tokens_per_s_summed
(each rank's tokens over its own seconds, summed over the ranks), elapsed_s and, on the CPU,
cpu_s (this process's wall and CPU seconds of training, evaluation and saving excluded; CPU time
is what a shared machine cannot steal); on a GPU instead mfu (the ranks' mean model FLOPs
utilisation against the GPU's dense BF16 peak, for the GPUs `sizes.GPU_PEAK_BF16` knows) and
peak_mem_gib (the most any rank's CUDA allocator has held); and val_bpb/val_loss at evaluations.
Under several processes the group's timeout covers rank 0 writing a checkpoint
(--dist-timeout-minutes), and under bf16 FSDP gathers in bf16 and reduces in fp32.

The package: `config` (TrainConfig and the command line generated from its fields), `checks`,
`distributed` (processes, devices, DDP/FSDP2), `fused_loss`, `checkpoint` (save, resume),
`metrics` (validation, metrics.jsonl, progress), `loop` (the steps) and `command` (`littlekit
train`). Each name is imported from the module that defines it, e.g.

    from littlekit.lm.train.config import TrainConfig
    from littlekit.lm.train.loop import train
"""

