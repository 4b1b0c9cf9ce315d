"""littlekit's benchmarks as lm-evaluation-harness tasks: the YAML configs in this folder, and the
hooks they call (`lm_eval_tasks.hooks`). Give the harness this folder as its include path:

    lm_eval --include_path "$(littlekit eval --lm-eval-tasks)" --tasks littlekit_clear \\
        --model hf --model_args pretrained=MODEL_DIR --device cpu

Tasks: littlekit_clear, littlekit_comta, littlekit_curriculum_{plain,reversed,scratchpad},
littlekit_mathcamps. `hooks` says what each scores and how it equals `littlekit eval NAME`.
"""

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent
