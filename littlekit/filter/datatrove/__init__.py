"""The filter stages as datatrove pipeline blocks, run locally, on Slurm or on Ray.

One stage implementation serves every runner: `LittleKitFilter` wraps the same `Stage` objects
the in-process cascade (`littlekit.filter.cascade`) runs, and decides with the same code, so a document
gets the same scores, verdict and reason code in a notebook, under `littlekit filter` and on a
cluster.

    from littlekit.filter.datatrove.pipeline import build_datatrove_pipeline, run_datatrove
    from littlekit.filter.datatrove.report import datatrove_report

    if __name__ == "__main__":          # required: worker processes re-import this script
        pipeline = build_datatrove_pipeline("shards/", "kept/", "aoa,symbolic", rejected_dir="rejected/")
        run_datatrove(pipeline, tasks=8, workers=4, logging_dir="logs/")
        print(datatrove_report("logs/").summary())

Why the `__main__` guard: datatrove's local executor starts its worker pool with "forkserver",
and every worker re-imports the main script; without the guard each worker would start the
whole run again.

What goes where (per task `rank`, so reruns overwrite rather than append):

    kept/<rank>.jsonl.gz                    kept documents: every input field, plus littlekit_scores
    rejected/input/<rank>.jsonl.gz          records that never became documents (bad_json, empty_text, ...)
    rejected/<stage>/<rank>.jsonl.gz        documents that stage dropped: filter_stage, filter_reason
    logs/completions/<rank>                 datatrove's marker: this task finished
    logs/stats/<rank>.json                  per-task counts; datatrove_report() adds them up
    logs/littlekit_run.json                 the run's manifest: settings and input files (see Resume)
    kept/.littlekit_output.json             which run the folder's files are (rejected/ has one too)

Foreign fields: every input field passes through to the output unchanged (as `littlekit filter`
in process writes them), whatever its name or value: `media`, `metadata`, `rank`, `token_count`
and the like are plain fields here, not datatrove's. The one exception is a field under a name
these blocks write themselves (littlekit_scores, filter_stage, filter_reason, filter_detail,
littlekit_record_error): it is not ours, so it is kept renamed to `input_<name>` (with the
prefix repeated if that name is taken too), e.g. a previous run's `littlekit_scores` comes out as
`input_littlekit_scores` beside this run's. (In process the kept file holds the input record
itself, so there such a field keeps its name: the in-process runner writes no scores into it.)

Workers never receive loaded models: a filter is pickled as its stage name plus options, and the
stage (fastText model, encoder, AoA table) is built inside the worker the first time it is
needed, once per process and options, and reused by every later task that process runs (its
per-word memos stay warm too); each build is counted in the task's stats (`stage_builds`, see
`datatrove_stage_builds`). Each local worker still pays its own start-up once (imports, AoA
table, models: a few seconds), so more workers only pay off when the run has far more work than
that. The encoder stage puts one model per worker on the GPU: locally use workers=1 for it, on
Slurm gpus_per_task=1.

Resume: datatrove skips a task whose completion marker exists and reruns every other task from
the start, overwriting that task's files, so a killed run started again with the same settings
ends with the same files as an uninterrupted run. Changing the number of tasks, the stages or
the input between the two runs would break that (reshard the input, or mix the outputs of two
versions of a file), so `run_datatrove` records the configuration and each input file's size and
modification time in the logging directory and refuses, before touching any output, a rerun that
differs, naming the changed file (`ResumeRefused`). Size and modification time rather than a hash:
they come with the folder listing datatrove does anyway, where a hash would read every input byte
in the driver at every start and resume (hours for a large remote dataset); any rewrite of a file
changes its modification time. An edit that keeps the size and restores the old time (`touch -r`,
`rsync -t` of another version) is not seen; a file only touched is refused although unchanged.

One run per output folder: `<rank>` file names would let a run with other settings (fewer
tasks, another input) overwrite part of an earlier run's folder and leave the rest, so
`filter_with_datatrove` refuses an output folder holding another run's files (`OutputInUse`),
unless `force=True` (`littlekit filter --force`): the run is then written beside the folder and
replaces it as a whole once every task has completed (`outputs`).

Layout: `blocks` (the filter blocks and the metadata keys they write), `readers`, `writers`,
`pipeline` (the pipeline, its executor, `filter_with_datatrove`), `resume` (the run's manifest),
`outputs` (which run an output folder belongs to) and `report` (the counts from the stats).
Import the public names from here; the private ones from the submodule that defines them.
"""

