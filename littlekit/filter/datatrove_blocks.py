"""The datatrove blocks under their old name: `littlekit.filter.datatrove` holds them now.

Kept so that existing imports, and pipelines pickled by an earlier version (a Slurm run's
executor.pik names its blocks as `littlekit.filter.datatrove_blocks.LittleKitFilter` and the
like), still resolve.
"""

from __future__ import annotations

from littlekit.filter.datatrove import *  # noqa: F403
from littlekit.filter.datatrove import __all__  # noqa: F401  (what * gives, as before)
from littlekit.filter.datatrove.blocks import _STAGE_CACHE, _cached_stage, _scores_of  # noqa: F401
from littlekit.filter.datatrove.blocks import SafeDocStats as _SafeDocStats  # noqa: F401
from littlekit.filter.datatrove.readers import _error_document, _to_datatrove  # noqa: F401
from littlekit.filter.datatrove.writers import _finite  # noqa: F401
from littlekit.filter.datatrove.writers import make_writer as _writer  # noqa: F401
