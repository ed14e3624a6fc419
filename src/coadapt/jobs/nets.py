"""Small models, one per family, sized so that CPU compute dominates a step.

No dropout or other training-time randomness: a resumed job then needs only
its parameters, optimizer state and data cursor to continue exactly.
"""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, inputs: int, hidden: int, classes: int, layers: int = 2) -> None:
        super().__init__()
        dims = [inputs] + [hidden] * layers
        blocks: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:], strict=True):
            blocks += [nn.Linear(a, b), nn.ReLU()]
        self.body = nn.Sequential(*blocks, nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class SignalCNN(nn.Module):
    """1D CNN for MNIST-1D: three stride-2 conv layers (40 -> 20 -> 10 -> 5), linear head."""

    def __init__(self, length: int = 40, channels: int = 32, classes: int = 10) -> None:
        super().__init__()
        c = channels
        self.features = nn.Sequential(
            nn.Conv1d(1, c, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv1d(c, c, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv1d(c, c, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.head = nn.Linear(c * (length // 8), classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x.unsqueeze(1)).flatten(1))


class CharLSTM(nn.Module):
    """Character language model: embedding, one LSTM layer, linear read-out."""

    def __init__(self, vocab: int, embed: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embed(x))
        return self.out(h)


class CharTransformer(nn.Module):
    """Causal pre-norm transformer character LM with learned positions."""

    def __init__(self, vocab: int, seq_len: int, width: int = 128, heads: int = 4,
                 layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(seq_len, width))
        nn.init.normal_(self.pos, std=0.02)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, vocab)
        # a plain attribute, not a buffer: DDP would otherwise broadcast it every forward
        self.mask = nn.Transformer.generate_square_subsequent_mask(seq_len)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        h = self.embed(x) + self.pos[:t]
        h = self.blocks(h, mask=self.mask[:t, :t], is_causal=True)
        return self.out(self.norm(h))
