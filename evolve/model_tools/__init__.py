"""From a user's PyTorch program to problems and back: `evolve model profile`, `extract` and `apply` (docs/model.md).

program.py loads the user's file; graph.py traces it into a functional FX graph with the shapes each node ran at;
chains.py finds the runs of ops one kernel could fuse; patterns.py groups nodes and chains by the code they run;
timing.py times every node; roofline.py bounds them; profile.py makes the table; seeds.py writes Triton seeds;
extract.py writes problem folders; apply.py and substitute.py put the best kernels back and measure the program.
"""
