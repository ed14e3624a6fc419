"""Offline data sets with fixed, seeded train/validation splits, and the sample stream.

Everything here is built from files already on the machine: scikit-learn's
bundled digits CSV and Python's own stdlib sources. Nothing is downloaded.
"""

from __future__ import annotations

import gzip
import importlib.util
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


@dataclass(frozen=True)
class Split:
    """Inputs and targets of one split, indexed along dim 0 by sample."""

    inputs: torch.Tensor
    targets: torch.Tensor

    def __len__(self) -> int:
        return int(self.inputs.shape[0])


@dataclass(frozen=True)
class Data:
    train: Split
    val: Split
    classes: int


# ---------------------------------------------------------------- digits
def _sklearn_data_dir() -> Path:
    """scikit-learn's bundled data folder, found without importing sklearn (saves ~1.5 s
    per worker start)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("scikit-learn is not installed; it ships the digits data set")
    return Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 8x8 digits (the same rows as sklearn.datasets.load_digits)."""
    with gzip.open(_sklearn_data_dir() / "digits.csv.gz", "rt") as fh:
        raw = np.loadtxt(fh, delimiter=",", dtype=np.float32)
    return raw[:, :-1], raw[:, -1].astype(np.int64)


def load_digits(split_seed: int = 0, val_fraction: float = 0.2) -> Data:
    """Digits scaled to [0, 1], shuffled once with ``split_seed``; the last
    ``val_fraction`` is the validation split."""
    x, y = digits_arrays()
    perm = np.random.default_rng(split_seed).permutation(len(y))
    n_val = int(round(len(y) * val_fraction))
    tr, va = perm[:-n_val], perm[-n_val:]
    xt = torch.from_numpy(x / 16.0).float()
    yt = torch.from_numpy(y)
    return Data(Split(xt[tr].contiguous(), yt[tr].contiguous()),
                Split(xt[va].contiguous(), yt[va].contiguous()), classes=10)


# ---------------------------------------------------------------- text
TEXT_FILES: tuple[str, ...] = (
    "argparse.py", "ast.py", "calendar.py", "configparser.py", "dataclasses.py",
    "datetime.py", "difflib.py", "enum.py", "fractions.py", "functools.py",
    "inspect.py", "ipaddress.py", "pathlib.py", "pickle.py", "shutil.py",
    "statistics.py", "subprocess.py", "tarfile.py", "textwrap.py", "threading.py",
    "typing.py", "zipfile.py",
)
"""A fixed, sorted list of stdlib modules (about 1.6 MB of text)."""

VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))
"""Newline and printable ASCII; anything else maps to one extra 'unknown' id."""
TEXT_CLASSES = len(VOCAB) + 1


def _encode(text: str) -> np.ndarray:
    table = np.full(256, len(VOCAB), dtype=np.uint8)
    for i, ch in enumerate(VOCAB):
        table[ord(ch)] = i
    raw = np.frombuffer(text.encode("latin-1", errors="replace"), dtype=np.uint8)
    return table[raw]


def stdlib_text() -> str:
    """The concatenated sources of TEXT_FILES from this interpreter's stdlib."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts = []
    for name in TEXT_FILES:
        path = root / name
        if not path.is_file():
            raise RuntimeError(f"stdlib source {path} is missing; the text jobs need it")
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def load_text(seq_len: int, split_seed: int = 0, chunk: int = 4096,
              val_fraction: float = 0.1, max_val: int = 256) -> Data:
    """Character windows of ``seq_len + 1`` ids (input = first seq_len, target =
    shifted by one). Whole ``chunk``-sized pieces of the corpus go to validation
    (seeded), so no validation window overlaps a training window."""
    ids = torch.from_numpy(_encode(stdlib_text()).astype(np.int64))
    n_chunks = len(ids) // chunk
    perm = np.random.default_rng(split_seed).permutation(n_chunks)
    n_val = max(1, int(round(n_chunks * val_fraction)))
    is_val = np.zeros(n_chunks, dtype=bool)
    is_val[perm[:n_val]] = True
    w = seq_len + 1
    per_chunk = chunk // w
    pieces = ids[: n_chunks * chunk].view(n_chunks, chunk)[:, : per_chunk * w]
    windows = pieces.reshape(n_chunks, per_chunk, w)
    train = windows[torch.from_numpy(~is_val)].reshape(-1, w).contiguous()
    val = windows[torch.from_numpy(is_val)].reshape(-1, w)
    pick = np.random.default_rng(split_seed + 1).permutation(len(val))[:max_val]
    val = val[torch.from_numpy(np.sort(pick))].contiguous()
    return Data(Split(train[:, :-1], train[:, 1:]), Split(val[:, :-1], val[:, 1:]),
                classes=TEXT_CLASSES)


# ---------------------------------------------------------------- sample order
def epoch_permutation(n: int, seed: int, epoch: int) -> torch.Tensor:
    """The order of the n training samples in one epoch; identical on every rank and
    independent of the worker count and batch size, so a resize does not change
    which samples the job sees."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=gen)


class SampleStream:
    """Cursor (epoch, pos) over the per-epoch permutations; take(k) wraps epochs."""

    def __init__(self, n: int, seed: int, epoch: int = 0, pos: int = 0) -> None:
        self.n, self.seed, self.epoch, self.pos = n, seed, epoch, pos
        self._perm = epoch_permutation(n, seed, epoch)

    def take(self, k: int) -> torch.Tensor:
        out = []
        while k > 0:
            if self.pos >= self.n:
                self.epoch += 1
                self.pos = 0
                self._perm = epoch_permutation(self.n, self.seed, self.epoch)
            got = min(k, self.n - self.pos)
            out.append(self._perm[self.pos: self.pos + got])
            self.pos += got
            k -= got
        return out[0] if len(out) == 1 else torch.cat(out)
