"""Pruning the kept compiled caches (harness/compiled.py) after an evaluation, with many sources kept: the first
prune of a process walks every kept file; later ones walk only the folder just written. Prints a table.

    python benchmarks/kept_caches.py [--sources 57 400] [--kernels 20] [--files 6]

Each source's folder holds --kernels kernel folders of --files small files (a Triton specialization's cubin, ptx,
llir, ttgir, ttir and json), as the softmax seed's 20 specializations do.
"""
import argparse
import tempfile
import time
from pathlib import Path

from evolve.harness.compiled import prune


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, nargs="+", default=[57, 400])
    parser.add_argument("--kernels", type=int, default=20)
    parser.add_argument("--files", type=int, default=6)
    args = parser.parse_args()
    print("| sources kept | files | first prune | next prune (one folder written) |")
    print("| --- | --- | --- | --- |")
    for sources in args.sources:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / "compiled"
            for i in range(sources):
                for j in range(args.kernels):
                    folder = root / f"source{i}" / f"kernel{j}"
                    folder.mkdir(parents=True)
                    for f in range(args.files):
                        (folder / f"file{f}").write_bytes(b"x" * 100)
            began = time.perf_counter()
            prune(root, 2 << 30)
            first = time.perf_counter() - began
            began = time.perf_counter()
            prune(root, 2 << 30, changed=root / "source0")
            later = time.perf_counter() - began
            print(f"| {sources} | {sources * args.kernels * args.files:,} | {first:.3f} s | {later:.4f} s |")


if __name__ == "__main__":
    main()
