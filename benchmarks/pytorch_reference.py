"""The paper's Latin-square transformer written in PyTorch eager, the reference pelab is checked and
timed against.

It is the architecture of pelab's TransformerEncoder with its defaults (post-LN blocks, a learned
PE added at the input of every block, nn.MultiheadAttention, a GELU MLP with GELU after both
linears, last-token readout, log-softmax, NLL loss), written the way a PyTorch user would write it.

    python3 pytorch_reference.py check DIR   # replay pelab's dumped weights and batches
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d_model, heads, tokens, mlp_ratio=4, final_gelu=True):
        super().__init__()
        self.pe = nn.Parameter(torch.empty(tokens, d_model))
        self.attention = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_model * mlp_ratio)
        self.linear2 = nn.Linear(d_model * mlp_ratio, d_model)
        self.final_gelu = final_gelu

    def forward(self, x):
        x = x + self.pe
        attended, _ = self.attention(x, x, x, need_weights=False)
        h = self.norm1(x + attended)
        m = self.linear2(F.gelu(self.linear1(h)))
        if self.final_gelu:
            m = F.gelu(m)
        return self.norm2(h + m)


class Model(nn.Module):
    def __init__(self, input_size, num_classes, layers, d_model, heads, tokens, pe_std=0.2):
        super().__init__()
        self.input_projection = nn.Linear(input_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, tokens) for _ in range(layers))
        for block in self.blocks:
            nn.init.normal_(block.pe, 0.0, pe_std)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, inputs):
        x = self.input_projection(inputs)
        for block in self.blocks:
            x = block(x)
        return F.log_softmax(self.head(x[:, -1]), dim=-1)


def pelab_name(name):
    """Maps a parameter name of this model to pelab's (TransformerEncoder's named_parameters)."""
    parts = name.split(".")
    if parts[0] != "blocks":
        return name
    block, rest = parts[1], parts[2:]
    if rest == ["pe"]:
        return f"pe{block}.table"
    return ".".join([f"block{block}"] + rest)


def load_pelab_weights(model, folder):
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            array = np.load(os.path.join(folder, pelab_name(name) + ".npy"))
            if tuple(array.shape) != tuple(parameter.shape):
                raise SystemExit(f"{name}: pelab's {pelab_name(name)} has shape {array.shape}, "
                                 f"expected {tuple(parameter.shape)}")
            parameter.copy_(torch.from_numpy(array))


def train_steps(model, batches, lr, weight_decay=0.0):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = F.nll_loss(model(inputs), targets)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return losses


def check(folder, tolerance):
    """Replays the steps pelab dumped (reference_dump) and compares the losses."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    torch.set_num_threads(1)
    model = Model(config["input_size"], config["num_classes"], config["layers"],
                  config["d_model"], config["heads"], config["tokens"])
    load_pelab_weights(model, os.path.join(folder, "weights"))
    batches = []
    for step in range(config["steps"]):
        inputs = torch.from_numpy(np.load(os.path.join(folder, f"inputs-{step}.npy")))
        targets = torch.from_numpy(np.load(os.path.join(folder, f"targets-{step}.npy")))
        batches.append((inputs, targets))
    losses = train_steps(model, batches, config["lr"], config["weight_decay"])
    worst = 0.0
    for step, (ours, theirs) in enumerate(zip(losses, config["losses"])):
        difference = abs(ours - theirs)
        worst = max(worst, difference / max(1.0, abs(theirs)))
        print(f"step {step}: pytorch {ours:.7f}  pelab {theirs:.7f}  |diff| {difference:.2e}")
    if worst > tolerance:
        print(f"FAIL: relative difference {worst:.2e} > {tolerance:.0e}", file=sys.stderr)
        return 1
    print(f"OK: {len(losses)} steps agree within {tolerance:.0e} (worst {worst:.2e})")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    check_parser = sub.add_parser("check", help="compare with a folder written by reference_dump")
    check_parser.add_argument("folder")
    check_parser.add_argument("--tolerance", type=float, default=1e-5)
    args = parser.parse_args()
    if args.command == "check":
        return check(args.folder, args.tolerance)
    return 2


if __name__ == "__main__":
    sys.exit(main())
