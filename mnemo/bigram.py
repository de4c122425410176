"""The smallest language model: a neural bigram, `logits = E[x] @ W`, with hand-written gradients.

    h      = E[x]                     [N, d]   the embedding row of each input id
    logits = h @ W                    [N, V]
    p      = softmax(logits)          [N, V]
    loss   = mean over counted positions of -ln p[n, y[n]]

Backward, with n_pos the number of positions the loss counts (all, or those the mask selects):

    d_logits = (p - onehot(y)) / n_pos,   zero on positions the mask leaves out
    dW       = h^T @ d_logits
    dh       = d_logits @ W^T
    dE       = scatter-add of dh into the rows x:  np.add.at(dE, x, dh)

`np.add.at` and not `dE[x] += dh`: with fancy indexing, `+=` is a read-modify-write of a
temporary, so an id used twice in a batch keeps only ONE of its gradients (the last write wins);
`np.add.at` is unbuffered and sums them.  tests/test_bigram.py has a test that fails the other way.

The softmax is the stable one: each row is shifted by its maximum before exponentiating, and
the loss is taken from the shifted logit, never from a probability that may underflow to 0.

Baselines reported beside the model (`baselines`): uniform, ln V; unigram, the entropy of the
training token frequencies (see `unigram_entropy` for why plain frequencies, not add-one), and
for information the add-one training unigram's loss on the validation data.

Not compiled with mypyc: numpy does the work here, so compiling would only add a build step.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from mnemo.data import BatchLoader, TokenStream
from mnemo.errors import ConfigError, FormatError

FloatArray = NDArray[np.floating[Any]]
IntArray = NDArray[np.integer[Any]]

NPZ_FORMAT: Final = 1
"""Version of the .npz weights layout written by `BigramModel.save` (arrays E, W, format)."""


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


@dataclass
class Grads:
    dE: FloatArray
    dW: FloatArray


class BigramModel:
    """Embedding table E [V, d] and output matrix W [d, V]: the next id depends on the current id only."""

    def __init__(self, E: FloatArray, W: FloatArray) -> None:
        if E.ndim != 2 or W.ndim != 2 or E.shape[1] != W.shape[0] or E.shape[0] != W.shape[1]:
            raise ConfigError(
                f"bigram weights must be E [V, d] and W [d, V], got E {E.shape} and W {W.shape}"
            )
        if E.dtype != W.dtype or not np.issubdtype(E.dtype, np.floating):
            raise ConfigError(f"bigram weights must share one float dtype, got {E.dtype} and {W.dtype}")
        self.E: FloatArray = E
        self.W: FloatArray = W

    @classmethod
    def init(
        cls, vocab_size: int, dim: int, *, seed: int = 0, dtype: type[np.floating[Any]] = np.float32
    ) -> BigramModel:
        """E ~ N(0, 1), W = 0: the fresh model predicts the uniform distribution, loss exactly ln V.

        W = 0 is a safe start because E is random: the first step gives W the gradient h^T
        d_logits (non-zero), and E starts learning from the second step on.
        """
        if vocab_size < 2:
            raise ConfigError(f"vocab_size must be >= 2, got {vocab_size}")
        if dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        rng = np.random.default_rng(seed)
        E = rng.standard_normal((vocab_size, dim)).astype(dtype)
        W = np.zeros((dim, vocab_size), dtype=dtype)
        return cls(E, W)

    @property
    def vocab_size(self) -> int:
        return int(self.E.shape[0])

    @property
    def dim(self) -> int:
        return int(self.E.shape[1])

    def params(self) -> list[FloatArray]:
        return [self.E, self.W]

    def _flat(self, x: IntArray) -> NDArray[np.int64]:
        flat = np.asarray(x, dtype=np.int64).reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= self.vocab_size):
            bad = int(flat[(flat < 0) | (flat >= self.vocab_size)][0])
            raise ConfigError(f"token id {bad} is outside the model's vocabulary of {self.vocab_size} ids")
        return flat

    def logits(self, x: IntArray) -> FloatArray:
        """[..., V] logits for input ids of any shape."""
        flat = self._flat(x)
        out: FloatArray = (self.E[flat] @ self.W).reshape(*np.shape(x), self.vocab_size)
        return out

    def loss(self, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None = None) -> float:
        return self.loss_and_grads(x, y, mask, grads=False)[0]

    def loss_and_grads(
        self, x: IntArray, y: IntArray, mask: NDArray[np.bool_] | None = None, *, grads: bool = True
    ) -> tuple[float, int, Grads | None]:
        """`(loss, n_pos, grads)` for inputs x and targets y of one shape (e.g. [B, T]), mask alike.

        The loss is the mean over counted positions (all, or where mask is True); see the module
        docstring for the backward pass.  grads=False skips it and returns None.
        """
        if np.shape(x) != np.shape(y):
            raise ConfigError(f"inputs and targets must have one shape, got {np.shape(x)} and {np.shape(y)}")
        xf = self._flat(x)
        yf = self._flat(y)
        mf = None if mask is None else np.asarray(mask, dtype=np.bool_).reshape(-1)
        h = self.E[xf]
        loss, d_logits, n_pos = _cross_entropy_inplace(h @ self.W, yf, mf, grads=grads)
        if not grads:
            return loss, n_pos, None
        dW: FloatArray = h.T @ d_logits
        dh = d_logits @ self.W.T
        dE: FloatArray = np.zeros_like(self.E)
        np.add.at(dE, xf, dh)
        return loss, n_pos, Grads(dE=dE, dW=dW)

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
            nxt = int(np.argmax(self.E[out[-1]] @ self.W))
            out.append(nxt)
            if stop_id is not None and nxt == stop_id:
                break
        return out

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write E and W to a .npz (no pickle) via a temporary file and a rename: never a partial file."""
        target = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent or ".")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, format=np.int64(NPZ_FORMAT), E=self.E, W=self.W)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BigramModel:
        """Read weights written by `save`; anything else is a FormatError naming the file."""
        try:
            with np.load(path, allow_pickle=False) as z:
                names = set(z.files)
                if names != {"format", "E", "W"}:
                    raise FormatError(f"{path}: not a mnemo bigram weights file (arrays {sorted(names)})")
                version = int(z["format"])
                if version != NPZ_FORMAT:
                    raise FormatError(
                        f"{path}: bigram weights format {version}, this mnemo reads {NPZ_FORMAT}"
                    )
                E = z["E"]
                W = z["W"]
        except FormatError:
            raise
        except (OSError, ValueError) as exc:
            raise FormatError(f"{path}: cannot read bigram weights: {exc}") from exc
        try:
            return cls(E, W)
        except ConfigError as exc:
            raise FormatError(f"{path}: {exc}") from exc


# ---- optimizers ----


class SGD:
    """Plain gradient descent: p -= lr * g."""

    def __init__(self, params: Sequence[FloatArray], lr: float) -> None:
        self.params = list(params)
        self.lr = lr

    def step(self, grads: Sequence[FloatArray]) -> None:
        for p, g in zip(self.params, grads, strict=True):
            p -= self.lr * g


class Adam:
    """Adam (Kingma & Ba) with bias correction; updates the parameter arrays in place."""

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

    def step(self, grads: Sequence[FloatArray]) -> None:
        self.t += 1
        c1 = 1.0 - self.beta1**self.t
        c2 = 1.0 - self.beta2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * (g * g)
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


Optimizer = SGD | Adam


def make_optimizer(name: str, model: BigramModel, lr: float) -> Optimizer:
    if lr <= 0:
        raise ConfigError(f"learning rate must be > 0, got {lr}")
    if name == "adam":
        return Adam(model.params(), lr)
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
        opt.step([g.dE, g.dW])
    return loss, n_pos


def evaluate(model: BigramModel, loader: BatchLoader, *, max_windows: int | None = None) -> float:
    """Mean loss over every counted position of the loader's windows (or `max_windows` evenly spread).

    Averaged per position, not per batch, so a smaller last batch or a batch with few masked
    positions weighs what it holds.  No counted position at all is a ConfigError.
    """
    total = 0.0
    count = 0
    if max_windows is None or max_windows >= loader.n_windows:
        batches = iter(loader)
    else:
        picks = np.linspace(0, loader.n_windows - 1, num=max_windows).round().astype(np.int64)
        step = loader.batch_size
        batches = (loader.get(picks[i : i + step]) for i in range(0, len(picks), step))
    for b in batches:
        loss, n_pos, _ = model.loss_and_grads(b.inputs, b.targets, b.mask, grads=False)
        total += loss * n_pos
        count += n_pos
    if count == 0:
        raise ConfigError("evaluation data has no position to score (no token carries the loss mask)")
    return total / count


@dataclass
class PretrainResult:
    model: BigramModel
    baselines: Baselines
    history: list[tuple[int, float, float]] = field(default_factory=list)
    """(step, mean training loss since the previous report, validation loss) at every report."""
    continuation: list[int] = field(default_factory=list)


def pretrain(
    train: TokenStream,
    val: TokenStream | None = None,
    *,
    vocab_size: int,
    val_fraction: float = 0.1,
    steps: int = 1000,
    batch_size: int = 8,
    context: int = 64,
    dim: int = 64,
    lr: float = 0.01,
    optimizer: Literal["adam", "sgd"] = "adam",
    seed: int = 0,
    eval_every: int = 100,
    eval_windows: int = 128,
    prompt: Sequence[int] = (),
    n_generate: int = 40,
    stop_id: int | None = None,
    decode: Callable[[list[int]], str] | None = None,
    out: str | os.PathLike[str] | None = None,
    log: Callable[[str], None] = print,
) -> PretrainResult:
    """Train a bigram model on `train`, report against the baselines on `val`, save the weights.

    `val` None splits the tail `val_fraction` of every training array off as validation data.
    Prints (through `log`): the baselines, then at step 0, every `eval_every` steps and the last
    step the mean training loss since the previous report and the validation loss (each with its
    perplexity; validation over up to `eval_windows` windows spread over the data), then a greedy
    continuation of `prompt` (shown through `decode` when given), and the path of the saved
    weights when `out` is given.  Memory: a step holds one [batch_size * context, V] float32 array
    (the defaults with V = 32,768: 512 * 32,768 * 4 bytes = 64 MiB) besides the weights.
    """
    if steps < 0:
        raise ConfigError(f"steps must be >= 0, got {steps}")
    if eval_every < 1:
        raise ConfigError(f"eval_every must be >= 1, got {eval_every}")
    if val is None:
        train, val = train.split(val_fraction)
    loader = BatchLoader(train, context=context, batch_size=batch_size, order="random", seed=seed)
    val_loader = BatchLoader(val, context=context, batch_size=batch_size, order="sequential")
    base = baselines(train, vocab_size, val)
    model = BigramModel.init(vocab_size, dim, seed=seed)
    opt = make_optimizer(optimizer, model, lr)
    result = PretrainResult(model=model, baselines=base)

    log(f"train: {train.n_tokens:,} tokens in {loader.n_windows:,} windows of {context}; "
        f"val: {val.n_tokens:,} tokens in {val_loader.n_windows:,} windows")
    log(f"baseline uniform  loss {base.uniform:.4f}  ppl {perplexity(base.uniform):,.2f}  "
        f"(ln V, V={vocab_size})")
    log(f"baseline unigram  loss {base.unigram:.4f}  ppl {perplexity(base.unigram):,.2f}  "
        "(entropy of the training token frequencies)")
    if base.unigram_val is not None:
        log(f"(the add-one training unigram scores {base.unigram_val:.4f} on the validation data)")

    def report(step: int, train_loss: float) -> None:
        v = evaluate(model, val_loader, max_windows=eval_windows)
        result.history.append((step, train_loss, v))
        log(f"step {step:>6}/{steps}  train loss {train_loss:.4f} ppl {perplexity(train_loss):,.2f}  "
            f"val loss {v:.4f} ppl {perplexity(v):,.2f}")

    report(0, evaluate(model, loader, max_windows=eval_windows))
    total = 0.0
    count = 0
    for step in range(1, steps + 1):
        b = loader.next_batch()
        loss, n_pos = train_step(model, opt, b.inputs, b.targets, b.mask)
        total += loss * n_pos
        count += n_pos
        if step % eval_every == 0 or step == steps:
            report(step, total / count if count else float("nan"))
            total = 0.0
            count = 0

    if prompt:
        result.continuation = model.greedy(prompt, n_generate, stop_id=stop_id)
        shown = decode(result.continuation) if decode is not None else " ".join(map(str, result.continuation))
        log(f"greedy continuation: {shown!r}")
    if out is not None:
        model.save(out)
        log(f"saved weights to {out}")
    return result
