"""A program for `evolve model`: a small GPT-style model (4 pre-LayerNorm blocks, width 768, 12 heads, GELU MLP) on
8 sequences of 512 tokens, in bfloat16 on a GPU and float32 on the CPU.

    evolve model profile benchmarks/gpt_block.py
    evolve model extract benchmarks/gpt_block.py --pick c1,o2 --out model-problems
    evolve run model-problems/<name> --budget 10m      # for each folder written
    evolve model apply benchmarks/gpt_block.py --problems model-problems/<name>,model-problems/<name>
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads)), dim=-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.fc, self.act, self.out = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, width: int = 768, heads: int = 12, layers: int = 4):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)


def program():
    torch.manual_seed(0)
    dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    tokens = 512 if torch.cuda.is_available() else 64  # the CPU profiles a shorter sequence
    return GPT().to(dtype), (torch.randn(8, tokens, 768, dtype=dtype),)
