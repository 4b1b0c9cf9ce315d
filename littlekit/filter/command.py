"""`littlekit filter`: run the filter's stages over documents, in process or as datatrove blocks.

Where each part lives: the command line in `littlekit.filter.parser`, the stages' options
(flag > filter_config.json > default) in `littlekit.filter.options`, the path checks in
`littlekit.filter.paths`, the in-process run in `littlekit.filter.inprocess` and the datatrove
runs (local, Slurm, Ray) in `littlekit.filter.cluster`.
"""

from __future__ import annotations

import argparse

from littlekit.filter import parser
from littlekit.filter.parser import INPROCESS


def add_filter_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`littlekit filter`'s parser, run by `run_filter`."""
    p = parser.add_filter_parser(subparsers)
    p.set_defaults(handler=run_filter)
    return p


def run_filter(args: argparse.Namespace) -> int:
    """The in-process run, or the datatrove one (--executor local|slurm|ray)."""
    if args.executor != INPROCESS:
        from littlekit.filter.cluster import run_cluster  # imports datatrove only when it runs

        return run_cluster(args)
    from littlekit.filter.inprocess import run_inprocess

    return run_inprocess(args)
