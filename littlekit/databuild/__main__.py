"""`python -m littlekit.databuild --from ../shared/data --out data`."""

from __future__ import annotations

import argparse
from pathlib import Path

from littlekit.databuild import build_all


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m littlekit.databuild", description=__doc__)
    parser.add_argument("--from", dest="source", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--force", action="store_true", help="replace the built files in a non-empty --out")
    args = parser.parse_args()
    build_all(args.source, args.out, force=args.force)


if __name__ == "__main__":
    main()
