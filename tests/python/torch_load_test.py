"""Loads a bitgrad GPT checkpoint into nanoGPT's model with the README's recipe, run as written
(the fenced block after "<!-- recipe: PyTorch load -->", or after "<!-- recipe: PyTorch load,
BIDE head -->" for a checkpoint of model.head: bide), and prints the model's mean
cross-entropy over FILE in `bitgrad eval`'s windows (non-overlapping block_size windows, each
token after the first predicted once). usage: torch_load_test.py README CKPT TEXT_FILE GELU"""
import math
import re
import sys

import h5py
import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from nanogpt_model import GPT  # noqa: E402

readme, path, text_file, gelu = sys.argv[1:5]
with h5py.File(path, "r") as f:
    bide = f.attrs.get("model.head", "softmax") == "bide"
name = "PyTorch load, BIDE head" if bide else "PyTorch load"
recipe = re.search(r"<!-- recipe: " + name + r" -->\s*```python\n(.*?)```", open(readme).read(), re.S)
assert recipe, f"README has no '{name}' recipe"
with h5py.File(path, "r") as f:
    a = f.attrs
    model = GPT(int(a["model.vocab_size"]), int(a["model.block_size"]), int(a["model.n_layer"]),
                int(a["model.n_head"]), int(a["model.n_embd"]), bool(a["model.bias"]), gelu)
    vocab = a["vocab_chars"]
vocab = vocab.decode("latin-1") if isinstance(vocab, bytes) else vocab
exec(recipe.group(1), {"path": path, "model": model})  # the recipe, as a user would run it
model.eval()
ids = [vocab.index(c) for c in open(text_file, encoding="utf-8").read()]
block = model.transformer.wpe.weight.shape[0]
total, count = 0.0, 0
with torch.no_grad():
    for w in range(0, len(ids) - 1, block):
        n = min(block, len(ids) - 1 - w)
        x = torch.tensor([ids[w:w + n]])
        y = torch.tensor(ids[w + 1:w + n + 1])
        total += F.cross_entropy(model(x)[0], y, reduction="sum").item()
        count += n
print(f"loss {total / count:.6f} perplexity {math.exp(total / count):.4f}")
