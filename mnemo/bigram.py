"""The smallest language model: a neural bigram, `logits = E[x] @ W + b`, with hand-written gradients.

    h      = E[x]                     [N, d]   the embedding row of each input id
    logits = h @ W + b                [N, V]
    p      = softmax(logits)          [N, V]
    loss   = mean over counted positions of -ln p[n, y[n]]

Backward, with n_pos the number of positions the loss counts (all, or those the mask selects):

    d_logits = (p - onehot(y)) / n_pos,   zero on positions the mask leaves out
    dW       = h^T @ d_logits
    db       = sum over positions of d_logits
    dh       = d_logits @ W^T
    dE       = scatter-add of dh into the rows x:  np.add.at(dE, x, dh)

`np.add.at` and not `dE[x] += dh`: with fancy indexing, `+=` is a read-modify-write of a
temporary, so an id used twice in a batch keeps only ONE of its gradients (the last write wins);
`np.add.at` is unbuffered and sums them.  tests/test_bigram.py has a test that fails the other way.

`BigramModel.loss_and_grads` computes exactly these sums, once per DISTINCT input id: all the
positions of one input share their logits row, so their rows of d_logits add up to one,
count * p - (sum of their onehot(y)), the onehot part scattered with np.add.at (a bigram that
occurs twice must count twice), and dE of that id is that row times W^T.  A batch of 32 x 64
positions of code holds ~780 distinct ids, so this is 2.6x less work than a row per position,
with the same gradient (tested against the per-position formulas above and against finite
differences).

The softmax is the stable one: each row is shifted by its maximum before exponentiating, and
the loss is taken from the shifted logit, never from a probability that may underflow to 0.

Baselines reported beside the model (`baselines`): uniform, ln V; unigram, the entropy of the
training token frequencies (see `unigram_entropy` for why plain frequencies, not add-one), and
for information the add-one training unigram's loss on the validation data.

Not compiled with mypyc: numpy does the work here, so compiling would only add a build step.
"""

from __future__ import annotations

import io
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from mnemo.batches import BatchLoader, TokenStream
from mnemo.defaults import (
    DEFAULT_BATCH,
    DEFAULT_CONTEXT,
    DEFAULT_DIM,
    DEFAULT_EVAL_EVERY,
    DEFAULT_EVAL_WINDOWS,
    DEFAULT_GENERATE,
    DEFAULT_LR,
    DEFAULT_OPTIMIZER,
    DEFAULT_SEED,
    DEFAULT_STEPS,
    DEFAULT_VAL_FRACTION,
)
from mnemo.errors import ConfigError, FormatError
from mnemo.fileio import write_atomic

FloatArray = NDArray[np.floating[Any]]
IntArray = NDArray[np.integer[Any]]

NPZ_FORMAT: Final = 2
"""Version of the .npz weights layout written by `BigramModel.save`: arrays format, E, W and b
(format 1, before the output bias, had no b)."""


# ---- loss ----


def cross_entropy(
    logits: FloatArray, targets: IntArray, mask: NDArray[np.bool_] | None = None
) -> tuple[float, FloatArray, int]:
    """Mean of -ln softmax(logits)[n, targets[n]] over the counted positions, its gradient, and their number.

    `logits` is [N, V], `targets` [N], `mask` None (every position counts) or [N] booleans (only
    True positions count).  Returns `(loss, d_logits, n_pos)` with d_logits = (p - onehot) / n_pos
    on counted rows and 0 elsewhere.  With no counted position the loss is 0.0, the gradient all
    zeros and n_pos 0 (callers skip such a step rather than divide by zero).  `logits` is left
    untouched; see `_cross_entropy_inplace` for the version that reuses it.
    """
    z = np.array(logits, dtype=np.result_type(logits.dtype, np.float32))
    return _cross_entropy_inplace(z, targets, mask)


def _cross_entropy_inplace(
    z: FloatArray, targets: IntArray, mask: NDArray[np.bool_] | None, *, grads: bool = True
) -> tuple[float, FloatArray, int]:
    """`cross_entropy` computed in the logits array itself, which becomes the gradient.

    With V = 32,768 one [N, V] array is the whole memory of a step (N = 512 positions: 64 MiB in
    float32), so the shift, the exponentials, the probabilities and the gradient all reuse it;
    each full pass over it costs (a division by s and one by n_pos are one multiplication).
    grads=False stops after the loss (evaluation) and leaves z holding exp(z - m).
    Per row, with m the row maximum and s = sum_j exp(z_j - m):
        -ln p_y = ln s - (z_y - m)      (taken before exponentiating: exp(z_y - m) may underflow to 0)
        d_logits = exp(z - m) / s - onehot(y)
    """
    n = z.shape[0]
    if z.ndim != 2:
        raise ConfigError(f"logits must be a 2-D [N, V] array, got shape {z.shape}")
    if targets.shape != (n,):
        raise ConfigError(f"targets must have shape ({n},) to match logits {z.shape}, got {targets.shape}")
    if mask is not None and mask.shape != (n,):
        raise ConfigError(f"mask must have shape ({n},) to match logits {z.shape}, got {mask.shape}")
    rows = np.arange(n)
    z -= z.max(axis=1, keepdims=True)
    target_shifted = z[rows, targets]
    np.exp(z, out=z)
    sums = z.sum(axis=1)
    picked = np.log(sums) - target_shifted
    if mask is None:
        n_pos = n
        total = float(picked.sum())
    else:
        n_pos = int(np.count_nonzero(mask))
        total = float(picked[mask].sum())
    if n_pos == 0:
        z.fill(0.0)
        return 0.0, z, 0
    if not grads:
        return total / n_pos, z, n_pos
    # (p - onehot) / n_pos = exp(z - m) * (1 / (s * n_pos)) - onehot / n_pos; masked-out rows scale by 0
    scale = 1.0 / (sums * n_pos)
    if mask is not None:
        scale[~mask] = 0.0
    z *= scale[:, None]
    z[rows, targets] -= np.where(mask, 1.0 / n_pos, 0.0) if mask is not None else 1.0 / n_pos
    return total / n_pos, z, n_pos


def perplexity(loss: float) -> float:
    """exp(mean cross-entropy in nats): the size of a uniform choice that is as uncertain."""
    return math.exp(loss)


# ---- baselines ----


def uniform_loss(vocab_size: int) -> float:
    """Cross-entropy of the uniform guess over V ids, ln V: a model that learned nothing."""
    return math.log(vocab_size)


def unigram_entropy(counts: NDArray[np.integer[Any]]) -> float:
    """Entropy in nats of the token frequencies `counts / counts.sum()`: -sum p ln p over seen ids.

    Plain frequencies, not add-one: this is the lowest loss any model that ignores context can
    reach on the data the counts come from, with no smoothing constant to choose.  Add-one would
    give every unseen id a pseudo-count -- with a 32,768-id vocabulary and a small training set
    that moves real probability mass onto ids that never occur and makes the baseline easier to
    beat by an amount that depends on V and the data size, not on the model.  Against plain
    training entropy the bar is the strict one: a context-free model does no better than this even
    on its own training data, so validation loss below it means the model uses context.
    """
    total = int(counts.sum())
    if total == 0:
        raise ConfigError("cannot compute a unigram baseline: the training data has no counted token")
    p = counts[counts > 0].astype(np.float64) / total
    return float(-(p * np.log(p)).sum())


def unigram_cross_entropy(
    train_counts: NDArray[np.integer[Any]], eval_counts: NDArray[np.integer[Any]]
) -> float:
    """Loss on other data (validation) of the add-one unigram model fitted on `train_counts`.

    q_i = (train_counts[i] + 1) / (N + V); the result is -sum_i eval_counts[i] ln q_i / sum eval_counts.
    Here add-one is needed, not a choice: an id seen in validation but never in training would
    otherwise cost ln 0.  Reported beside the plain entropy (the headline baseline) because the
    gap between the two shows how far the validation data is from the training data.
    """
    if train_counts.shape != eval_counts.shape:
        raise ConfigError(f"count vectors differ in size: {train_counts.shape} and {eval_counts.shape}")
    n_eval = int(eval_counts.sum())
    if n_eval == 0:
        raise ConfigError("cannot score a unigram model on data with no counted token")
    q = (train_counts.astype(np.float64) + 1.0) / (float(train_counts.sum()) + train_counts.size)
    return float(-(eval_counts * np.log(q)).sum() / n_eval)


@dataclass(frozen=True)
class Baselines:
    """The losses, in nats, a model has to beat."""

    uniform: float
    """ln V: every id equally likely."""
    unigram: float
    """Entropy of the training token frequencies: the best context-free model, on its own data."""
    unigram_val: float | None = None
    """The add-one training unigram's loss on validation data (see `unigram_cross_entropy`)."""


def baselines(train: TokenStream, vocab_size: int, val: TokenStream | None = None) -> Baselines:
    """Uniform and unigram baselines (with `val`, also the unigram's loss on it); ids checked against V."""
    counts = train.token_counts(vocab_size)
    return Baselines(
        uniform=uniform_loss(vocab_size),
        unigram=unigram_entropy(counts),
        unigram_val=None if val is None else unigram_cross_entropy(counts, val.token_counts(vocab_size)),
    )


# ---- model ----

ROW_CHUNK: Final = 256
"""Distinct input ids per block of the forward/backward pass: one [256, V] float32 block is 32 MiB
at V = 32,768, whatever the batch size."""


@dataclass
class Grads:
    """Gradients of the mean loss: dW [d, V], db [V], and the embedding's only non-zero rows.

    `rows` are the distinct input ids of the batch (sorted) and `dE_rows[k]` the gradient of
    E[rows[k]]; every other row of dE is zero, and the optimizers update only these rows.
    """

    rows: NDArray[np.int64]
    dE_rows: FloatArray
    dW: FloatArray
    db: FloatArray
    vocab_size: int

    @property
    def dE(self) -> FloatArray:
        """The dense [V, d] embedding gradient (for inspection and tests; training uses the rows)."""
        out: FloatArray = np.zeros((self.vocab_size, self.dE_rows.shape[1]), dtype=self.dE_rows.dtype)
        out[self.rows] = self.dE_rows
        return out


class BigramModel:
    """Embedding E [V, d], output matrix W [d, V] and output bias b [V]: logits = E[x] @ W + b.

    The next id depends on the current id only.  b carries what does not depend on it (how common
    each id is), so E and W only have to learn what the current id changes.
    """

    def __init__(self, E: FloatArray, W: FloatArray, b: FloatArray | None = None) -> None:
        if E.ndim != 2 or W.ndim != 2 or E.shape[1] != W.shape[0] or E.shape[0] != W.shape[1]:
            raise ConfigError(
                f"bigram weights must be E [V, d] and W [d, V], got E {E.shape} and W {W.shape}"
            )
        if E.dtype != W.dtype or not np.issubdtype(E.dtype, np.floating):
            raise ConfigError(f"bigram weights must share one float dtype, got {E.dtype} and {W.dtype}")
        if b is None:
            b = np.zeros(E.shape[0], dtype=E.dtype)
        if b.shape != (E.shape[0],) or b.dtype != E.dtype:
            raise ConfigError(f"bigram bias must be b [V] of E's dtype, got b {b.shape} {b.dtype} for E {E.shape}")
        self.E: FloatArray = E
        self.W: FloatArray = W
        self.b: FloatArray = b

    @classmethod
    def init(
        cls,
        vocab_size: int,
        dim: int,
        *,
        seed: int = 0,
        dtype: type[np.floating[Any]] = np.float32,
        unigram_counts: NDArray[np.integer[Any]] | None = None,
    ) -> BigramModel:
        """E ~ N(0, 1/d), W = 0, b = ln of the add-one unigram of `unigram_counts` (or 0).

        W = 0 makes the fresh model's prediction exactly softmax(b): the add-one training unigram
        (uniform without counts, loss ln V), so training starts at the unigram baseline instead of
        spending its first steps learning how common each id is.  E is small (|E[x]| ~ 1 whatever
        d) because every Adam step moves each weight of W by about lr, which moves a logit by about
        lr * |E[x]|_1: with the old E ~ N(0, 1), d = 64, that is 50 lr per step, and what W learned
        for the frequent ids came out as noise of several nats on the logits of every rare one.
        W = 0 is safe: E is random, so W's first gradient h^T d_logits is not zero.
        """
        if vocab_size < 2:
            raise ConfigError(f"vocab_size must be >= 2, got {vocab_size}")
        if dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        rng = np.random.default_rng(seed)
        E = (rng.standard_normal((vocab_size, dim)) / math.sqrt(dim)).astype(dtype)
        W = np.zeros((dim, vocab_size), dtype=dtype)
        b = np.zeros(vocab_size, dtype=dtype)
        if unigram_counts is not None:
            if unigram_counts.shape != (vocab_size,):
                raise ConfigError(f"unigram_counts must have shape ({vocab_size},), got {unigram_counts.shape}")
            smoothed = unigram_counts.astype(np.float64) + 1.0
            b = np.log(smoothed / smoothed.sum()).astype(dtype)
        return cls(E, W, b)

    @property
    def vocab_size(self) -> int:
        return int(self.E.shape[0])

    @property
    def dim(self) -> int:
        return int(self.E.shape[1])

    def params(self) -> list[FloatArray]:
        return [self.E, self.W, self.b]

    def _flat(self, x: IntArray) -> NDArray[np.int64]:
        flat = np.asarray(x, dtype=np.int64).reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= self.vocab_size):
            bad = int(flat[(flat < 0) | (flat >= self.vocab_size)][0])
            raise ConfigError(f"token id {bad} is outside the model's vocabulary of {self.vocab_size} ids")
        return flat

    def logits(self, x: IntArray) -> FloatArray:
        """[..., V] logits for input ids of any shape."""
        flat = self._flat(x)
        out: FloatArray = (self.E[flat] @ self.W + self.b).reshape(*np.shape(x), self.vocab_size)
        return out

    def loss(self, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None = None) -> float:
        return self.loss_and_grads(x, y, mask, grads=False)[0]

    def loss_and_grads(
        self, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None = None, *, grads: bool = True
    ) -> tuple[float, int, Grads | None]:
        """`(loss, n_pos, grads)` for inputs x and targets y of one shape (e.g. [B, T]), mask alike.

        The loss is the mean over counted positions (all, or where mask is True); see the module
        docstring for the backward pass, done here once per distinct input id.  grads=False skips
        it and returns None.  No counted position: loss 0.0, n_pos 0 and all-zero gradients.
        """
        n_pos, rows, inv, yf, bounds = self._positions(x, y, mask)
        dW = np.zeros_like(self.W) if grads else self.W[:0]
        db = np.zeros_like(self.b) if grads else self.b[:0]
        dE_rows = np.empty((rows.size, self.dim), dtype=self.E.dtype)
        total = 0.0
        for z, h, local, targets, p0, p1, r0, r1 in self._blocks(rows, inv, yf, bounds):
            total += self._block(z, h, local, targets, n_pos, dW, db, dE_rows[r0:r1] if grads else None)
        if n_pos == 0:
            return 0.0, 0, Grads(rows, dE_rows, dW, db, self.vocab_size) if grads else None
        if not grads:
            return total / n_pos, n_pos, None
        return total / n_pos, n_pos, Grads(rows, dE_rows, dW, db, self.vocab_size)

    def _positions(
        self, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None
    ) -> tuple[int, NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
        """The counted positions grouped by distinct input: (n_pos, distinct inputs, each
        position's row among them, targets, and where each block of ROW_CHUNK rows starts),
        positions sorted by row so that each block of rows owns one slice of them."""
        if np.shape(x) != np.shape(y):
            raise ConfigError(f"inputs and targets must have one shape, got {np.shape(x)} and {np.shape(y)}")
        if mask is not None and np.shape(mask) != np.shape(x):
            raise ConfigError(f"mask must have the shape of the inputs {np.shape(x)}, got {np.shape(mask)}")
        xf = self._flat(x)
        yf = self._flat(y)
        if mask is not None:
            keep = np.asarray(mask, dtype=np.bool_).reshape(-1)
            xf, yf = xf[keep], yf[keep]
        rows, inv = np.unique(xf, return_inverse=True)
        order = np.argsort(inv, kind="stable")
        inv, yf = inv[order], yf[order]
        bounds = np.searchsorted(inv, np.arange(0, rows.size + ROW_CHUNK, ROW_CHUNK))
        return int(xf.size), rows, inv, yf, bounds

    def _blocks(
        self, rows: NDArray[np.int64], inv: NDArray[np.int64], yf: NDArray[np.int64], bounds: NDArray[np.int64]
    ) -> Iterator[tuple[FloatArray, FloatArray, NDArray[np.int64], NDArray[np.int64], int, int, int, int]]:
        """Per block of distinct inputs: (its logits h @ W, h, each position's row in the block,
        the targets, the positions' slice p0:p1, the rows' slice r0:r1).  One logits block is
        reused by every block: a fresh 32 MiB array per block would pay its page faults again
        each time (docs/speed.md, "Measurements behind the code")."""
        block = np.empty((min(ROW_CHUNK, rows.size), self.vocab_size), dtype=self.E.dtype)
        for k, r0 in enumerate(range(0, rows.size, ROW_CHUNK)):
            r1 = min(r0 + ROW_CHUNK, rows.size)
            p0, p1 = int(bounds[k]), int(bounds[k + 1])
            h = self.E[rows[r0:r1]]
            z = block[: r1 - r0]
            np.matmul(h, self.W, out=z)
            yield z, h, inv[p0:p1] - r0, yf[p0:p1], p0, p1, r0, r1

    def position_losses(
        self, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None = None
    ) -> tuple[FloatArray, NDArray[np.int64]]:
        """(-ln p of each counted position's target, that target), both in one order of their own
        (grouped by input id): what a sum weighted by the targets needs, e.g. bits per byte."""
        n_pos, rows, inv, yf, bounds = self._positions(x, y, mask)
        losses = np.empty(n_pos, dtype=np.float64)
        for z, h, local, targets, p0, p1, r0, r1 in self._blocks(rows, inv, yf, bounds):
            losses[p0:p1] = self._block_losses(z, local, targets)[0]
        return losses, yf

    def _block_losses(
        self, z: FloatArray, local: NDArray[np.int64], targets: NDArray[np.int64]
    ) -> tuple[FloatArray, FloatArray]:
        """(-ln p of each position's target in one block, each row's sum of exponentials s).
        z holds h @ W and is overwritten with exp(z + b - m), which _block goes on from."""
        z += self.b
        picked = z[local, targets]
        m = z.max(axis=1, keepdims=True)
        z -= m
        np.exp(z, out=z)
        s = z.sum(axis=1)
        # -ln p_y = ln s + m - z_y, from the logit itself: exp(z_y - m) may underflow to 0
        out: FloatArray = (np.log(s)[local] + m[local, 0] - picked).astype(np.float64)
        return out, s

    def _block(
        self,
        z: FloatArray,
        h: FloatArray,
        local: NDArray[np.int64],
        targets: NDArray[np.int64],
        n_pos: int,
        dW: FloatArray,
        db: FloatArray,
        dE_rows: FloatArray | None,
    ) -> float:
        """Loss summed over one block of distinct inputs' positions; adds the block's gradients.

        `z` holds h @ W (and is overwritten), `h` the block's embedding rows, `local[i]` the row
        of position i, `targets[i]` its target.  Row r of d_logits is the sum over its positions of (p - onehot(y)) / n_pos =
        (count_r * p_r - sum of onehot(y)) / n_pos, so dW, db and dE_r = d_logits_r @ W^T equal
        the per-position formulas of the module docstring summed over the positions (the
        scatter-add of dh into E happens before the matmul instead of after it).
        """
        losses, s = self._block_losses(z, local, targets)
        total = float(losses.sum())
        if dE_rows is None:
            return total
        counts = np.bincount(local, minlength=h.shape[0])
        z *= (counts / (s * n_pos)).astype(z.dtype)[:, None]
        # np.add.at, not `z[local, targets] -= ...`: a bigram that occurs twice in the batch must
        # subtract twice, and a fancy-indexed -= would keep only one of them
        np.add.at(z, (local, targets), -1.0 / n_pos)
        dW += h.T @ z
        db += z.sum(axis=0)
        dE_rows[...] = z @ self.W.T
        return total

    def greedy(self, prompt: Sequence[int], n_new: int, *, stop_id: int | None = None) -> list[int]:
        """The prompt's ids followed by n_new ids, each the most likely after the one before it.

        A bigram sees only the last id, so the prompt's earlier ids do not matter.  Stops early
        after emitting `stop_id` (e.g. <|end|>).  An empty prompt is a ConfigError: the model has
        no start token of its own (pass <|bos|>).
        """
        if len(prompt) == 0:
            raise ConfigError("greedy continuation needs a prompt of at least one id (e.g. <|bos|>)")
        out = [int(t) for t in prompt]
        self._flat(np.asarray(out, dtype=np.int64))
        for _ in range(n_new):
            nxt = int(np.argmax(self.E[out[-1]] @ self.W + self.b))
            out.append(nxt)
            if stop_id is not None and nxt == stop_id:
                break
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write E, W and b to a .npz (no pickle) through `fileio.write_atomic`: never a partial
        file, and the mode of any other output (0666 minus the umask)."""
        buf = io.BytesIO()
        np.savez(buf, format=np.int64(NPZ_FORMAT), E=self.E, W=self.W, b=self.b)
        write_atomic(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BigramModel:
        """Read weights written by `save` (format 1, before the bias, loads with b = 0); anything
        else is a FormatError naming the file."""
        from mnemo.location import location

        try:
            with np.load(location(path).local_path("weights file"), allow_pickle=False) as z:
                names = set(z.files)
                if names not in ({"format", "E", "W"}, {"format", "E", "W", "b"}):
                    raise FormatError(f"{path}: not a mnemo bigram weights file (arrays {sorted(names)})")
                version = int(z["format"])
                if version not in (1, NPZ_FORMAT) or (version == NPZ_FORMAT) != ("b" in names):
                    raise FormatError(
                        f"{path}: bigram weights format {version} with arrays {sorted(names)}; this mnemo "
                        f"reads format 1 (E, W) and {NPZ_FORMAT} (E, W, b)"
                    )
                E = z["E"]
                W = z["W"]
                b = z["b"] if "b" in names else None
        except FormatError:
            raise
        except (OSError, ValueError) as exc:
            raise FormatError(f"{path}: cannot read bigram weights: {exc}") from exc
        try:
            return cls(E, W, b)
        except ConfigError as exc:
            raise FormatError(f"{path}: {exc}") from exc


# ---- optimizers ----


@dataclass
class Rows:
    """A gradient that is zero outside some rows: `values[k]` is the gradient of row `index[k]`."""

    index: NDArray[np.int64]
    values: FloatArray


Grad = FloatArray | Rows


class SGD:
    """Plain gradient descent: p -= lr * g (only the given rows for a `Rows` gradient)."""

    def __init__(self, params: Sequence[FloatArray], lr: float) -> None:
        self.params = list(params)
        self.lr = lr

    def step(self, grads: Sequence[Grad]) -> None:
        for p, g in zip(self.params, grads, strict=True):
            if isinstance(g, Rows):
                p[g.index] -= self.lr * g.values
            else:
                p -= self.lr * g


class Adam:
    """Adam (Kingma & Ba) with bias correction; updates the parameter arrays in place.

    A `Rows` gradient updates only its rows and their moments (lazy Adam): a row that is not in
    the batch keeps its weights and its state.  Dense Adam would read its gradient as 0 and keep
    moving the row on its stale momentum for the next ~10 steps -- about ten extra steps for every
    rare id each time it is seen -- and would cost a pass over all of E per step.
    """

    def __init__(
        self,
        params: Sequence[FloatArray],
        lr: float,
        *,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
    ) -> None:
        self.params = list(params)
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.t = 0
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]

    def step(self, grads: Sequence[Grad]) -> None:
        self.t += 1
        c1 = 1.0 - self.beta1**self.t
        c2 = 1.0 - self.beta2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            if isinstance(g, Rows):
                mr = self.beta1 * m[g.index] + (1.0 - self.beta1) * g.values
                vr = self.beta2 * v[g.index] + (1.0 - self.beta2) * (g.values * g.values)
                m[g.index] = mr
                v[g.index] = vr
                p[g.index] -= self.lr * (mr / c1) / (np.sqrt(vr / c2) + self.eps)
                continue
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * (g * g)
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


Optimizer = SGD | Adam


ADAM_BETA1: Final = 0.5
ADAM_EPS: Final = 1e-6


def make_optimizer(name: str, model: BigramModel, lr: float) -> Optimizer:
    """The optimizer `pretrain` uses.  Adam with beta1 0.5 and eps 1e-6, not 0.9 and 1e-8: runs are
    tens of steps of 2,048 positions, whose gradients are already averages, and momentum 0.9 lags
    ~10 steps behind them; and the W columns and biases of ids a batch barely touches have
    gradients ~1e-7 that eps 1e-8 lets Adam blow up into full lr steps of noise.  Measured on the
    demo's data (docs/pretraining.md): validation 7.06 -> 6.91 after 12 steps, 6.78 -> 6.68 after 60."""
    if not 0 < lr < math.inf:  # NaN too: it trained to NaN losses and a continuation of \x00
        raise ConfigError(f"learning rate must be a finite number > 0, got {lr}")
    if name == "adam":
        return Adam(model.params(), lr, beta1=ADAM_BETA1, eps=ADAM_EPS)
    if name == "sgd":
        return SGD(model.params(), lr)
    raise ConfigError(f"optimizer must be 'adam' or 'sgd', got {name!r}")


# ---- training ----


def train_step(
    model: BigramModel, opt: Optimizer, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None
) -> tuple[float, int]:
    """One forward, backward and update; `(loss, n_pos)`.  A batch with no counted position is skipped."""
    loss, n_pos, g = model.loss_and_grads(x, y, mask)
    if n_pos and g is not None:
        opt.step([Rows(g.rows, g.dE_rows), g.dW, g.db])
    return loss, n_pos


def evaluate(model: BigramModel, loader: BatchLoader, *, max_windows: int | None = None) -> float:
    """Mean loss over every counted position of the loader's windows (or `max_windows` evenly spread).

    Averaged per position, not per batch, so a smaller last batch or a batch with few masked
    positions weighs what it holds.  No counted position at all is a ConfigError.
    """
    return evaluate_bits(model, loader, None, max_windows=max_windows)[0]


def evaluate_bits(
    model: BigramModel,
    loader: BatchLoader,
    token_bytes: NDArray[np.integer[Any]] | None,
    *,
    max_windows: int | None = None,
) -> tuple[float, float | None]:
    """(mean loss in nats per counted position, bits per byte), over the windows `evaluate` takes.

    Bits per byte = the loss summed over the counted positions whose target is text, in bits,
    divided by the UTF-8 bytes those targets decode to: `token_bytes[id]` (0 for special tokens,
    whose prediction is left out of both sums, as nanochat's `evaluate_bpb` does).  Unlike the
    loss per token it does not depend on how much text a token holds, so it compares models of
    tokenizers that cut the same text into different numbers of tokens (a superword tokenizer
    and a plain one).  None without `token_bytes`, or when no counted target is text.
    """
    total = 0.0
    count = 0
    text_nats = 0.0
    text_bytes = 0
    if token_bytes is not None and token_bytes.shape != (model.vocab_size,):
        raise ConfigError(f"token_bytes must have one entry per id ({model.vocab_size}), got shape {token_bytes.shape}")
    if max_windows is None or max_windows >= loader.n_windows:
        picks = np.arange(loader.n_windows, dtype=np.int64)
    else:
        picks = np.linspace(0, loader.n_windows - 1, num=max_windows).round().astype(np.int64)
    # many windows per call: the model works once per distinct input id, and more windows share more
    for i in range(0, len(picks), _EVAL_WINDOWS_PER_CALL):
        b = loader.get(picks[i : i + _EVAL_WINDOWS_PER_CALL])
        if token_bytes is None:
            loss, n_pos, _ = model.loss_and_grads(b.inputs, b.targets, b.mask, grads=False)
            total += loss * n_pos
            count += n_pos
            continue
        losses, targets = model.position_losses(b.inputs, b.targets, b.mask)
        sizes = token_bytes[targets]
        total += float(losses.sum())
        count += int(losses.size)
        text_nats += float(losses[sizes > 0].sum())
        text_bytes += int(sizes.sum())
    if count == 0:
        raise ConfigError("evaluation data has no position to score (no token carries the loss mask)")
    bits = text_nats / math.log(2) / text_bytes if text_bytes else None
    return total / count, bits


def token_byte_counts(n_vocab: int, vocab: dict[int, bytes], special_ids: Iterable[int]) -> NDArray[np.int64]:
    """Bytes of text each id decodes to, 0 for special tokens and ids no token has: the
    `token_bytes` of `evaluate_bits` (mnemo pretrain builds it from the tokenizer:
    `token_byte_counts(tok.n_vocab, tok.vocab, tok.special_tokens.values())`)."""
    out = np.zeros(n_vocab, dtype=np.int64)
    for i, raw in vocab.items():
        out[i] = len(raw)
    out[list(special_ids)] = 0
    return out


_EVAL_WINDOWS_PER_CALL: Final = 256


@dataclass
class PretrainResult:
    model: BigramModel
    baselines: Baselines
    history: list[tuple[int, float, float]] = field(default_factory=list)
    """(step, mean training loss since the previous report, validation loss) at every report."""
    continuation: list[int] = field(default_factory=list)
    bits_per_byte: list[float | None] = field(default_factory=list)
    """Validation bits per byte at every report (evaluate_bits; None without token_bytes)."""


def pretrain(
    train: TokenStream,
    val: TokenStream | None = None,
    *,
    vocab_size: int,
    val_fraction: float = DEFAULT_VAL_FRACTION,
    steps: int = DEFAULT_STEPS,
    batch_size: int = DEFAULT_BATCH,
    context: int = DEFAULT_CONTEXT,
    dim: int = DEFAULT_DIM,
    lr: float = DEFAULT_LR,
    optimizer: Literal["adam", "sgd"] = DEFAULT_OPTIMIZER,
    seed: int = DEFAULT_SEED,
    eval_every: int = DEFAULT_EVAL_EVERY,
    eval_windows: int = DEFAULT_EVAL_WINDOWS,
    prompt: Sequence[int] = (),
    n_generate: int = DEFAULT_GENERATE,
    stop_id: int | None = None,
    decode: Callable[[list[int]], str] | None = None,
    out: str | os.PathLike[str] | None = None,
    log: Callable[[str], None] = print,
    progress: bool = False,
    token_bytes: NDArray[np.integer[Any]] | None = None,
) -> PretrainResult:
    """Train a bigram model on `train`, report against the baselines on `val`, save the weights.

    `val` None splits the tail `val_fraction` of every training array off as validation data.
    Prints (through `log`): the baselines, then at step 0, every `eval_every` steps and the last
    step the mean training loss since the previous report and the validation loss (each with its
    perplexity; validation over up to `eval_windows` windows spread over the data), then a greedy
    continuation of `prompt` (shown through `decode` when given), and the path of the saved
    weights when `out` is given.  With `token_bytes` (the bytes each id decodes to, 0 for
    special tokens: `token_byte_counts`) every validation line also gives bits per byte, the
    measure that compares tokenizers cutting the same text into different numbers of tokens.  The model starts from the add-one unigram of the training data
    (see `BigramModel.init`), so the step-0 validation loss is the add-one unigram's.

    `progress=True` (a terminal) also shows, on stderr, what is being prepared and a bar of the
    steps with the running training loss and steps/s; the `log` lines are the results and are
    printed either way.  Memory: one block of distinct inputs' logits, [ROW_CHUNK, V] float32
    (32 MiB at V = 32,768), besides the weights and Adam's two moments of each.
    """
    if steps < 0:
        raise ConfigError(f"steps must be >= 0, got {steps}")
    if eval_every < 1:
        raise ConfigError(f"eval_every must be >= 1, got {eval_every}")
    status = _status_line if progress else _quiet
    status(f"preparing: {train.n_tokens:,} tokens, counting them for the baselines...")
    if val is None:
        train, val = train.split(val_fraction)
    loader = BatchLoader(train, context=context, batch_size=batch_size, order="random", seed=seed)
    val_loader = BatchLoader(val, context=context, batch_size=batch_size, order="sequential")
    counts = train.token_counts(vocab_size)
    base = Baselines(
        uniform=uniform_loss(vocab_size),
        unigram=unigram_entropy(counts),
        unigram_val=unigram_cross_entropy(counts, val.token_counts(vocab_size)),
    )
    model = BigramModel.init(vocab_size, dim, seed=seed, unigram_counts=counts)
    opt = make_optimizer(optimizer, model, lr)
    result = PretrainResult(model=model, baselines=base)

    log(f"train: {train.n_tokens:,} tokens in {loader.n_windows:,} windows of {context}; "
        f"val: {val.n_tokens:,} tokens in {val_loader.n_windows:,} windows")
    log(f"baseline uniform  loss {base.uniform:.4f}  ppl {perplexity(base.uniform):,.2f}  "
        f"(ln V, V={vocab_size})")
    log(f"baseline unigram  loss {base.unigram:.4f}  ppl {perplexity(base.unigram):,.2f}  "
        "(entropy of the training token frequencies)")
    log(f"(the add-one training unigram scores {base.unigram_val:.4f} on the validation data; "
        "the model starts as that unigram)")

    bar: Any = None

    def report(step: int, train_loss: float) -> None:
        v, bpb = evaluate_bits(model, val_loader, token_bytes, max_windows=eval_windows)
        result.history.append((step, train_loss, v))
        result.bits_per_byte.append(bpb)
        line = (f"step {step:>6}/{steps}  train loss {train_loss:.4f} ppl {perplexity(train_loss):,.2f}  "
                f"val loss {v:.4f} ppl {perplexity(v):,.2f}" + ("" if bpb is None else f"  bpb {bpb:.4f}"))
        if bar is None:
            log(line)
        else:
            with bar.external_write_mode():
                log(line)

    status(f"evaluating the untrained model on {min(eval_windows, loader.n_windows)} training and "
           f"{min(eval_windows, val_loader.n_windows)} validation windows...")
    report(0, evaluate(model, loader, max_windows=eval_windows))
    if progress and steps:
        from tqdm import tqdm

        bar = tqdm(total=steps, desc="training", unit=" steps", file=sys.stderr, leave=False)
    total = 0.0
    count = 0
    try:
        for step in range(1, steps + 1):
            b = loader.next_batch()
            loss, n_pos = train_step(model, opt, b.inputs, b.targets, b.mask)
            total += loss * n_pos
            count += n_pos
            if bar is not None:
                bar.set_postfix_str(f"loss {total / count if count else float('nan'):.4f}", refresh=False)
                bar.update(1)
            if step % eval_every == 0 or step == steps:
                if bar is not None:
                    bar.set_description_str("evaluating")
                report(step, total / count if count else float("nan"))
                if bar is not None:
                    bar.set_description_str("training")
                total = 0.0
                count = 0
    finally:
        if bar is not None:
            bar.close()

    if prompt:
        result.continuation = model.greedy(prompt, n_generate, stop_id=stop_id)
        shown = decode(result.continuation) if decode is not None else " ".join(map(str, result.continuation))
        log(f"greedy continuation: {shown!r}")
    if out is not None:
        model.save(out)
        log(f"saved weights to {out}")
    return result


def _status_line(text: str) -> None:
    """What pretrain is doing, on a terminal: stderr, so that stdout keeps only the results."""
    print(text, file=sys.stderr, flush=True)


def _quiet(text: str) -> None:
    pass
