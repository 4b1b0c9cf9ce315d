"""What pyproject.toml cannot say: ship the filter's default tables from data/ inside the wheel.

The repository keeps one copy of every table, in data/ beside its SOURCE.md. The package
`littlekit._data` is mapped onto that folder, and only the files in SHIPPED go into a built
wheel (installed as littlekit/_data/<same relative path>), which is what `littlekit.config`
falls back to outside a checkout. Every shipped table goes with its folder's SOURCE.md
(source and licence). Everything else in data/ needs LITTLEKIT_DATA or a checkout. The
lm-evaluation-harness task configs (YAML) go in with their package.
"""

from setuptools import find_namespace_packages, setup

SHIPPED = {
    "littlekit._data": [
        "aoa/aoa_lemma.csv",  # the AoA stage's default table (littlekit.filter.lexicon.DEFAULT_TABLE)
        "aoa/SOURCE.md",  # its source, derivation and licence
    ]
}
# Non-Python files of littlekit's own packages: lm-evaluation-harness reads the task configs
TASK_CONFIGS = {"littlekit.evals.lm_eval_tasks": ["*.yaml", "_curriculum_template_yaml"]}

setup(
    packages=[*find_namespace_packages(include=["littlekit*"]), *SHIPPED],
    package_dir={"littlekit._data": "data"},
    package_data={**SHIPPED, **TASK_CONFIGS},
    include_package_data=False,  # only SHIPPED, never the rest of data/
)
