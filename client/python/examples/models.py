"""Real models to profile, built from scratch with no downloaded weights."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class Attention(nn.Module):
    """Plain (unfused) multi-head attention with dropout on the probabilities."""

    def __init__(self, hidden, heads, dropout, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.dropout = dropout

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
        if self.causal:
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = F.dropout(F.softmax(scores, dim=-1), self.dropout, self.training)
        out = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.proj(out)


class Block(nn.Module):
    """A pre-LayerNorm transformer layer: attention and a GeLU MLP (4h), each
    followed by dropout and a residual add."""

    def __init__(self, hidden, heads, dropout=0.1, causal=True):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attention = Attention(hidden, heads, dropout, causal)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)
        self.dropout = dropout

    def forward(self, x):
        x = x + F.dropout(self.attention(self.ln1(x)), self.dropout, self.training)
        y = self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x + F.dropout(y, self.dropout, self.training)


class Transformer(nn.Module):
    """GPT-2-style decoder (causal) or BERT-style encoder: embeddings, layers,
    final LayerNorm, a language-model head. Its direct children are the
    blocks the profiler reports (embedding, each layer, the head)."""

    def __init__(self, layers=2, hidden=64, heads=4, seq=32, vocab=128, dropout=0.1, causal=True):
        super().__init__()
        self.embedding = Embeddings(vocab, hidden, seq, dropout)
        for i in range(layers):
            self.add_module(f"layer{i}", Block(hidden, heads, dropout, causal))
        self.layers = layers
        self.head = Head(hidden, vocab)

    def forward(self, tokens):
        x = self.embedding(tokens)
        for i in range(self.layers):
            x = getattr(self, f"layer{i}")(x)
        return self.head(x)


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden, seq, dropout):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq, hidden)
        self.dropout = dropout

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        return F.dropout(self.tokens(tokens) + self.positions(positions), self.dropout,
                         self.training)


class Head(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x):
        return self.out(self.ln(x))


def gpt(layers=2, hidden=64, heads=4, seq=32, vocab=128):
    return Transformer(layers, hidden, heads, seq, vocab, causal=True)


def bert(layers=2, hidden=64, heads=4, seq=32, vocab=128):
    return Transformer(layers, hidden, heads, seq, vocab, causal=False)


def language_model_loss(batch_tokens):
    """Next-token cross-entropy against `batch_tokens` (shifted by one)."""
    targets = batch_tokens.roll(-1, dims=1)

    def loss(logits):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return loss


def vgg16(num_classes=10):
    """torchvision's VGG-16 (random weights), or None when torchvision is missing."""
    try:
        import torchvision
    except ImportError:
        return None
    return torchvision.models.vgg16(num_classes=num_classes)


def resnet50(num_classes=10):
    """torchvision's ResNet-50 (random weights; in-place ReLUs, batch norm),
    or None when torchvision is missing."""
    try:
        import torchvision
    except ImportError:
        return None
    return torchvision.models.resnet50(num_classes=num_classes)


class Recurrent(nn.Module):
    """Embedding, a two-layer recurrent network (nn.LSTM or nn.GRU) with
    dropout between the layers, and a linear head: the LSTM's gates are
    written in place on CPU."""

    def __init__(self, cell, vocab=64, hidden=32, layers=2, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.rnn = cell(hidden, hidden, layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.rnn(self.embedding(tokens))
        return self.head(out)


def lstm(vocab=64, hidden=32, layers=2):
    return Recurrent(nn.LSTM, vocab, hidden, layers)


def gru(vocab=64, hidden=32, layers=2):
    return Recurrent(nn.GRU, vocab, hidden, layers)


class ViT(nn.Module):
    """A small vision transformer: convolutional patch embedding, a class
    token, learned positions with dropout, pre-LayerNorm encoder blocks with
    dropout, and a classifier on the class token."""

    def __init__(self, image=32, patch=8, hidden=64, heads=4, layers=2, classes=10,
                 dropout=0.1):
        super().__init__()
        self.patches = nn.Conv2d(3, hidden, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, hidden))
        self.positions = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, hidden) * 0.02)
        self.dropout = dropout
        for i in range(layers):
            self.add_module(f"layer{i}", Block(hidden, heads, dropout, causal=False))
        self.layers = layers
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, images):
        x = self.patches(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        x = F.dropout(x + self.positions, self.dropout, self.training)
        for i in range(self.layers):
            x = getattr(self, f"layer{i}")(x)
        return self.head(self.ln(x[:, 0]))


def vit(image=32, patch=8, hidden=64, heads=4, layers=2, classes=10):
    return ViT(image, patch, hidden, heads, layers, classes)
