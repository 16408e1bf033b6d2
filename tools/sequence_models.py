"""Small models whose forward takes several arguments of integer and float dtypes: what
driftgate's multi-input checks, its language-model verdicts and their tests are built on.

  * TinyEncoder: BERT-like, forward(ids, attention_mask, token_type_ids) -> [batch, hidden]
    (the first position's vector after one attention block);
  * TinyLM: a decoder-only language model, forward(ids) -> logits [batch, positions, vocab]
    (causal attention, learned positions); TinyMaskedLM also takes attention_mask (1 real,
    0 padding), forward(ids, attention_mask);
  * Recommender: forward(categorical [batch, fields] int64, dense [batch, features] float32)
    -> [batch, 1], embedding bags over the categorical ids.

Each is built from torch.nn and functional ops only, so torch.jit.script and torch.jit.trace
both take it on torch 1.13 and 2.6. train_lm() fits a TinyLM for a few seconds on a synthetic
corpus (repeated arithmetic-like patterns), so that its greedy continuations are confident:
drift that flips one of them shows.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """Multi-head self-attention with an additive mask [batch, 1, positions, positions]."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x, mask):
        batch, positions, hidden = x.shape
        head = hidden // self.heads
        q, k, v = self.qkv(x).split(hidden, dim=2)
        q = q.reshape(batch, positions, self.heads, head).transpose(1, 2)
        k = k.reshape(batch, positions, self.heads, head).transpose(1, 2)
        v = v.reshape(batch, positions, self.heads, head).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(head) + mask
        weights = F.softmax(scores, dim=-1)
        mixed = torch.matmul(weights, v).transpose(1, 2).reshape(batch, positions, hidden)
        return self.out(mixed)


class Block(nn.Module):
    """Pre-norm transformer block: attention, then an MLP, each with a residual."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.attention = Attention(hidden, heads)
        self.norm2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x, mask):
        x = x + self.attention(self.norm1(x), mask)
        return x + self.mlp(self.norm2(x))


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """[batch, positions] of 1 (real) and 0 (padding) -> an additive [batch, 1, 1, positions] mask."""
    return (1.0 - attention_mask.to(torch.float32))[:, None, None, :] * -1e4


def causal_mask(positions: int, device: torch.device) -> torch.Tensor:
    """An additive [1, 1, positions, positions] mask hiding later positions."""
    upper = torch.ones(positions, positions, device=device).triu(1)
    return (upper * -1e4)[None, None, :, :]


class TinyEncoder(nn.Module):
    def __init__(self, vocab=128, hidden=32, heads=4, layers=1, positions=64, types=2):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.types = nn.Embedding(types, hidden)
        self.blocks = nn.ModuleList([Block(hidden, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)

    def forward(self, ids, attention_mask, token_type_ids):
        where = torch.arange(ids.shape[1], device=ids.device)[None, :]
        x = self.words(ids) + self.positions(where) + self.types(token_type_ids)
        mask = padding_mask(attention_mask)
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)[:, 0, :]


class TinyLM(nn.Module):
    def __init__(self, vocab=64, hidden=32, heads=4, layers=2, positions=96):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList([Block(hidden, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        where = torch.arange(ids.shape[1], device=ids.device)[None, :]
        x = self.words(ids) + self.positions(where)
        mask = causal_mask(ids.shape[1], ids.device)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


class TinyMaskedLM(TinyLM):
    """TinyLM that also takes an attention mask (1 real, 0 padding), as a padded batch needs."""

    def forward(self, ids, attention_mask):
        where = torch.arange(ids.shape[1], device=ids.device)[None, :]
        x = self.words(ids) + self.positions(where)
        mask = causal_mask(ids.shape[1], ids.device) + padding_mask(attention_mask)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


class Recommender(nn.Module):
    def __init__(self, fields=4, buckets=100, embedding=8, features=6):
        super().__init__()
        self.bags = nn.ModuleList([nn.EmbeddingBag(buckets, embedding, mode="mean") for _ in range(fields)])
        self.dense = nn.Linear(features, embedding)
        self.top = nn.Sequential(nn.Linear((fields + 1) * embedding, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, categorical, dense):
        parts = [self.dense(dense)]
        for i, bag in enumerate(self.bags):
            parts.append(bag(categorical[:, i:i + 1]))
        return self.top(torch.cat(parts, dim=1))


def corpus(generator, sequences, length, vocab):
    """Token sequences that follow short repeated patterns: each sequence counts up from a
    random start by a random step modulo the vocabulary (token 0 is never used), so the next
    token is predictable from the context."""
    starts = torch.randint(1, vocab, (sequences, 1), generator=generator)
    steps = torch.randint(1, 4, (sequences, 1), generator=generator)
    offsets = torch.arange(length)[None, :]
    return 1 + (starts - 1 + steps * offsets) % (vocab - 1)


def train_lm(model, seconds=None, steps=300, seed=0, length=48):
    """Fits `model` (a TinyLM) to the synthetic corpus with Adam for `steps` steps; returns its
    final loss. Deterministic for a seed on one thread."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    vocab = model.head.out_features
    model.train()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        batch = corpus(generator, 32, length + 1, vocab)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    return float(loss)


def greedy(model, ids, new_tokens, mask=None):
    """The greedy continuation of `ids` [1, positions]: append the argmax of the last position's
    logits, run again on the longer sequence; the new tokens as a list."""
    generated = []
    with torch.no_grad():
        for _ in range(new_tokens):
            logits = model(ids) if mask is None else model(ids, mask)
            token = int(logits[0, -1].argmax())
            generated.append(token)
            ids = torch.cat([ids, torch.tensor([[token]], dtype=ids.dtype)], dim=1)
            if mask is not None:
                mask = torch.cat([mask, torch.ones(1, 1, dtype=mask.dtype)], dim=1)
    return generated
