"""What one read of an evaluation's memory (harness/shared/processes.py, every 0.25 s of every evaluation) costs the
parent in CPU time, part by part. Prints a table. The evaluations side by side share one read of the process table a
poll interval (with N lanes, one read serves about N polls): "poll, table shared" is a poll whose table another read.
The parent hands each poll to a reader process (harness/parent/memory_reader.py): the last two columns are the parent's
CPU for such a poll (the process table read a poll interval ago at most, as in a run) and the poll's wall time.

    python benchmarks/memory_poll.py [--maps 0 3000] [--others 300] [--files 300] [--polls 200] [--cuda]

The evaluation is one process that imports torch, holds a memfd and an unlinked file open (so its memory maps are
read) and maps --maps extra regions (a CUDA process maps thousands); its folder holds --files files (a Triton cache
of hundreds). --others idle processes stand for the rest of a busy host (lanes, their spares, the system). With
--cuda the process also opens a CUDA context, as an evaluation's GPU runner and measurer do.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from evolve.harness.parent import memory_reader

from evolve.harness.shared import processes
CHILD = """import mmap, os, sys, tempfile, time
import torch
if sys.argv[2] == "cuda":
    torch.empty(1, device="cuda")
fd = os.memfd_create("held"); os.write(fd, b"x" * 1000000)
unlinked = tempfile.TemporaryFile(); unlinked.write(b"y" * 100000); unlinked.flush()
regions = [mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,  # alternate protections: none merge
                     prot=mmap.PROT_READ if i % 2 else mmap.PROT_READ | mmap.PROT_WRITE)
           for i in range(int(sys.argv[1]))]
print("ready", flush=True)
time.sleep(600)
"""


def per_call_ms(fn, polls: int, clock=time.thread_time) -> float:
    began = clock()
    for _ in range(polls):
        fn()
    return (clock() - began) / polls * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", type=int, nargs="+", default=[0, 3000], help="extra mapped regions of the process")
    parser.add_argument("--others", type=int, default=300, help="idle processes elsewhere on the host")
    parser.add_argument("--files", type=int, default=300, help="files in the evaluation's folder")
    parser.add_argument("--polls", type=int, default=200)
    parser.add_argument("--cuda", action="store_true", help="the process opens a CUDA context (needs a GPU)")
    args = parser.parse_args()
    others = [subprocess.Popen(["sleep", "600"]) for _ in range(args.others)]
    folder = tempfile.mkdtemp()
    for i in range(args.files):
        sub = os.path.join(folder, f"kernel{i // 10}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"file{i % 10}"), "wb") as f:
            f.write(b"c" * 3000)
    print(f"{sum(n.isdigit() for n in os.listdir('/proc'))} processes on the host, {args.files} files in the folder, "
          f"{args.polls} polls each")
    print("| regions mapped | maps lines | process table | nameless files | of which maps | folder | whole poll | "
          "poll, table shared | the parent's, read by a reader | its wall |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    try:
        for extra in args.maps:
            child = subprocess.Popen([sys.executable, "-c", CHILD, str(extra), "cuda" if args.cuda else "cpu"],
                                     stdout=subprocess.PIPE, text=True)
            child.stdout.readline()
            with open(f"/proc/{child.pid}/maps", "rb") as f:
                lines = sum(1 for _ in f)
            members = processes.tree([child.pid])
            row = [per_call_ms(lambda: processes.tree([child.pid]), args.polls),
                   per_call_ms(lambda: processes.nameless_file_bytes(members, set()), args.polls),
                   per_call_ms(lambda: processes._mapped_inodes(child.pid), args.polls),
                   per_call_ms(lambda: processes.folder_bytes([folder], set()), args.polls),
                   per_call_ms(lambda: processes.evaluation_bytes([child.pid], [folder]), args.polls),
                   per_call_ms(lambda: processes.evaluation_bytes([child.pid], [folder], 3600.0), args.polls),
                   per_call_ms(lambda: memory_reader.evaluation_bytes([child.pid], [folder], 0.25), args.polls),
                   per_call_ms(lambda: memory_reader.evaluation_bytes([child.pid], [folder], 0.25), args.polls,
                               clock=time.perf_counter)]
            print(f"| {extra} | {lines} | " + " | ".join(f"{ms:.2f} ms" for ms in row) + " |")
            child.kill()
            child.wait()
    finally:
        for proc in others:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
