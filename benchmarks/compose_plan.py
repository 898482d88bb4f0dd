"""How long the composer takes to learn its dispatch rule (evolve/compose.py, `learn`) from a population's per-case
figures, and the geometric mean the rule predicts. Prints a table.

    python benchmarks/compose_plan.py [--kernels 40 300 1000] [--seed 0]

Twelve cases like the norm problems' (two dtypes, six shapes). "related": every kernel within -10%..+5% of one
profile on each case; "independent": each figure drawn alone; "noise 1%" and "noise 2%": every kernel the same, its
figures off by timing noise alone (Gaussian, that standard deviation a case), so any rule there is one fitted to noise
(and would measure no better than the best kernel alone).
"""
import argparse
import math
import random
import time

from evolve import compose

SHAPES = [(4096, 2048), (4096, 4096), (4096, 8192), (4096, 16384), (32768, 4096), (1024, 32768)]


def cases() -> list:
    return [compose.Case(f"{dtype} {rows}x{cols}", {("dtype", 0): dtype, ("size", 0, 0): rows, ("size", 0, 1): cols})
            for dtype in ("float32", "bfloat16") for rows, cols in SHAPES]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, nargs="+", default=[40, 300, 1000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng, cs = random.Random(args.seed), cases()
    print("| kernels | figures | learn | best kernel alone | rule predicts | leaves |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in args.kernels:
        for kind in ("related", "independent", "noise 1%", "noise 2%"):
            profile = {c.label: rng.uniform(0.6, 0.9) for c in cs}

            def figure(label):
                if kind == "related":
                    return profile[label] * rng.uniform(0.9, 1.05)
                if kind == "independent":
                    return rng.uniform(0.5, 0.95)
                return profile[label] * (1 + rng.gauss(0, float(kind.split()[1].rstrip("%")) / 100))

            parts = {i: compose.Part(i, "", {c.label: figure(c.label) for c in cs}) for i in range(1, n + 1)}
            began = time.perf_counter()
            tree, loss = compose.learn(cs, parts)
            took = time.perf_counter() - began
            alone = max(math.exp(sum(math.log(p.value[c.label]) for c in cs) / len(cs)) for p in parts.values())
            print(f"| {n} | {kind} | {took * 1e3:.1f} ms | {alone:.4f} | {math.exp(-loss / len(cs)):.4f} | "
                  f"{len(compose.leaves(tree))} |")


if __name__ == "__main__":
    main()
