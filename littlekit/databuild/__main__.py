"""`python -m littlekit.databuild --from ../shared/data --out data`."""

from __future__ import annotations

import argparse
from pathlib import Path

from littlekit.databuild import build_all


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m littlekit.databuild", description=__doc__)
    parser.add_argument("--from", dest="source", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("data"))
    args = parser.parse_args()
    build_all(args.source, args.out)


if __name__ == "__main__":
    main()
