"""mnemo.batches: windows, the train/validation split, and the batch loader (with chat loss masks)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.batches import ID_MASK, MASKBIT, Batch, BatchIterator, BatchLoader, TokenStream, n_windows, split_stream, windows
from mnemo.errors import ArgumentTypeError, ConfigError, InputError

# ---- windows ----


def test_windows_worked_example() -> None:
    """ids 0..9, T=3, stride 3: windows ids[0:4], ids[3:7], ids[6:10] -- the last one ends on id 9."""
    ids = np.arange(10)
    x, y = windows(ids, 3, 3)
    assert x.shape == y.shape == (3, 3)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert y.tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_windows_targets_are_inputs_shifted_by_one() -> None:
    ids = np.random.default_rng(1).integers(0, 50, size=200)
    x, y = windows(ids, 16, 5)
    assert np.array_equal(y[:, :-1], x[:, 1:])
    for k in range(x.shape[0]):
        assert np.array_equal(x[k], ids[5 * k : 5 * k + 16])
        assert np.array_equal(y[k], ids[5 * k + 1 : 5 * k + 17])


def test_windows_default_stride_is_T_and_every_id_after_the_first_is_a_target_once() -> None:
    ids = np.arange(13)  # 13 = 4 * 3 + 1: exactly 4 windows of T + 1 = 4
    x, y = windows(ids, 3)
    assert x.shape == (4, 3)
    assert sorted(y.ravel().tolist()) == list(range(1, 13))


def test_windows_last_window_drops_the_tail() -> None:
    """ids 0..10, T=3, stride 3: (11 - 4) // 3 + 1 = 3 windows; (11 - 4) % 3 = 1 id (10) is dropped."""
    x, y = windows(np.arange(11), 3, 3)
    assert x.shape == (3, 3)
    assert y[-1].tolist() == [7, 8, 9]
    assert 10 not in y
    assert n_windows(11, 3, 3) == 3


def test_windows_overlapping_stride() -> None:
    x, y = windows(np.arange(6), 3, 1)
    assert x.tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert y.tolist() == [[1, 2, 3], [2, 3, 4], [3, 4, 5]]


def test_windows_exactly_T_plus_one_ids_is_one_window() -> None:
    x, y = windows(np.arange(5), 4)
    assert x.tolist() == [[0, 1, 2, 3]]
    assert y.tolist() == [[1, 2, 3, 4]]


def test_windows_stream_shorter_than_T_plus_one_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"stream of 4 ids is shorter than one window of T \+ 1 = 5 ids"):
        windows(np.arange(4), 4)
    with pytest.raises(ConfigError, match="stream of 0 ids"):
        windows(np.arange(0), 1)


@pytest.mark.parametrize(("T", "stride", "match"), [(0, None, "T must be >= 1, got 0"),
                                                    (4, 0, "stride must be between 1 and T=4, got 0"),
                                                    (4, 5, "stride must be between 1 and T=4, got 5")])
def test_windows_bad_sizes(T: int, stride: int | None, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        windows(np.arange(100), T, stride)


def test_windows_refuses_non_integer_or_2d_arrays() -> None:
    with pytest.raises(ConfigError, match="1-D integer numpy array, got shape"):
        windows(np.zeros(10, dtype=np.float32), 2)
    with pytest.raises(ConfigError, match=r"shape \(2, 5\)"):
        windows(np.zeros((2, 5), dtype=np.int64), 2)


def test_windows_are_views_of_a_memmap(tmp_path: Path) -> None:
    path = tmp_path / "ids.u16"
    mm = np.memmap(path, dtype=np.uint16, mode="w+", shape=(1000,))
    mm[:] = np.arange(1000) % 300
    mm.flush()
    ro = np.memmap(path, dtype=np.uint16, mode="r")
    x, y = windows(ro, 32, 8)
    assert np.shares_memory(x, ro) and np.shares_memory(y, ro)
    assert x.shape == ((1000 - 33) // 8 + 1, 32)
    assert y[3, 0] == ro[3 * 8 + 1]


def _naive_windows(ids: list[int], T: int, stride: int) -> list[list[int]]:
    """The obvious loop: every start 0, stride, 2 * stride, ... whose window of T + 1 ids fits."""
    out = []
    start = 0
    while start + T + 1 <= len(ids):
        out.append(ids[start : start + T + 1])
        start += stride
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 65535), max_size=60), st.integers(1, 12), st.data())
def test_windows_agree_with_the_obvious_loop(ids: list[int], T: int, data: st.DataObject) -> None:
    stride = data.draw(st.integers(1, T))
    expected = _naive_windows(ids, T, stride)
    arr = np.array(ids, dtype=np.uint16)
    assert n_windows(len(ids), T, stride) == len(expected)
    if not expected:
        with pytest.raises(ConfigError, match="shorter than one window"):
            windows(arr, T, stride)
        return
    x, y = windows(arr, T, stride)
    assert x.tolist() == [w[:-1] for w in expected]
    assert y.tolist() == [w[1:] for w in expected]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 0xFFFF), max_size=40), min_size=1, max_size=4),
    st.integers(1, 8),
    st.integers(1, 5),
    st.data(),
)
def test_loader_pass_agrees_with_windows_of_each_array(
    arrays: list[list[int]], T: int, batch_size: int, data: st.DataObject
) -> None:
    """One sequential pass = the windows of each array in turn, MASKBIT stripped, mask = bit of the target."""
    stride = data.draw(st.integers(1, T))
    expected = [w for a in arrays for w in _naive_windows(a, T, stride)]
    stream = TokenStream.from_arrays(*[np.array(a, dtype=np.uint16) for a in arrays], masked=True)
    if not expected:
        with pytest.raises(ConfigError, match="no window"):
            BatchLoader(stream, context=T, batch_size=batch_size, stride=stride)
        return
    loader = BatchLoader(stream, context=T, batch_size=batch_size, stride=stride, order="sequential")
    got_x, got_y, got_m = [], [], []
    for b in loader:
        assert b.mask is not None
        got_x += b.inputs.tolist()
        got_y += b.targets.tolist()
        got_m += b.mask.tolist()
    assert got_x == [[t & ID_MASK for t in w[:-1]] for w in expected]
    assert got_y == [[t & ID_MASK for t in w[1:]] for w in expected]
    assert got_m == [[t >= MASKBIT for t in w[1:]] for w in expected]


# ---- split ----


def test_split_stream_takes_the_tail() -> None:
    ids = np.arange(10)
    train, val = split_stream(ids, 0.2)
    assert train.tolist() == list(range(8))
    assert val.tolist() == [8, 9]
    assert np.shares_memory(train, ids) and np.shares_memory(val, ids)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_split_stream_bad_fraction(fraction: float) -> None:
    with pytest.raises(ConfigError, match=f"val_fraction must be strictly between 0 and 1, got {fraction}"):
        split_stream(np.arange(10), fraction)


def test_split_stream_that_leaves_a_side_empty() -> None:
    with pytest.raises(ConfigError, match="leaves 0 validation and 10 training ids"):
        split_stream(np.arange(10), 0.01)


def test_token_stream_split_splits_every_array() -> None:
    s = TokenStream.from_arrays(np.arange(10), np.arange(100, 120), masked=True)
    train, val = s.split(0.1)
    assert [a.tolist() for a in val.arrays] == [[9], [118, 119]]
    assert train.n_tokens == 9 + 18
    assert train.masked and val.masked


# ---- loader ----


def _window_rows(batch_inputs: np.ndarray, batch_targets: np.ndarray) -> list[list[int]]:
    return np.concatenate([batch_inputs, batch_targets[:, -1:]], axis=1).tolist()


def test_sequential_loader_over_two_arrays_never_crosses_between_them() -> None:
    """a = 0..8 gives (9 - 5) // 4 + 1 = 2 windows of T + 1 = 5; b = 100..106 gives 1; 3 in all."""
    stream = TokenStream.from_arrays(np.arange(9, dtype=np.uint16), np.arange(100, 107, dtype=np.uint16))
    loader = BatchLoader(stream, context=4, batch_size=2, order="sequential")
    assert loader.n_windows == 3
    assert len(loader) == 2
    batches = list(loader)
    assert [b.inputs.shape for b in batches] == [(2, 4), (1, 4)]
    rows = [r for b in batches for r in _window_rows(b.inputs, b.targets)]
    assert rows == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [100, 101, 102, 103, 104]]
    assert all(b.mask is None for b in batches)
    assert batches[0].inputs.dtype == np.int64


def test_sequential_next_batch_wraps_around() -> None:
    stream = TokenStream.from_arrays(np.arange(13))
    loader = BatchLoader(stream, context=3, batch_size=3, order="sequential")  # 4 windows
    firsts = [loader.next_batch().inputs[:, 0].tolist() for _ in range(3)]
    assert firsts == [[0, 3, 6], [9, 0, 3], [6, 9, 0]]


def test_random_loader_is_seeded_and_draws_real_windows() -> None:
    a = np.arange(0, 500, dtype=np.uint16)
    b = np.arange(1000, 1300, dtype=np.uint16)
    stream = TokenStream.from_arrays(a, b)

    def draws(seed: int) -> list[np.ndarray]:
        loader = BatchLoader(stream, context=16, batch_size=8, stride=4, seed=seed)
        return [loader.next_batch().inputs for _ in range(20)]

    one, again, other = draws(7), draws(7), draws(8)
    assert all(np.array_equal(p, q) for p, q in zip(one, again, strict=True))
    assert not all(np.array_equal(p, q) for p, q in zip(one, other, strict=True))
    loader = BatchLoader(stream, context=16, batch_size=8, stride=4, seed=7)
    seen: set[int] = set()
    for _ in range(200):
        batch = loader.next_batch()
        rows = np.concatenate([batch.inputs, batch.targets[:, -1:]], axis=1)
        # consecutive ids inside one array: a window that crossed from a into b would jump by 500+
        assert (np.diff(rows, axis=1) == 1).all()
        assert ((rows[:, 0] % 4 == 0) & ((rows[:, 0] < 500) | (rows[:, 0] >= 1000))).all()
        seen.update(rows[:, 0].tolist())
    assert len(seen) == loader.n_windows == n_windows(500, 16, 4) + n_windows(300, 16, 4)


def test_masked_stream_strips_maskbit_and_returns_the_mask_of_the_targets() -> None:
    """raw 5, 6, 7|M, 8|M, 9, 10|M with T=5: one window; the mask is the bit on each TARGET."""
    raw = np.array([5, 6, 7 | MASKBIT, 8 | MASKBIT, 9, 10 | MASKBIT], dtype=np.uint16)
    stream = TokenStream.from_arrays(raw, masked=True)
    loader = BatchLoader(stream, context=5, batch_size=1, order="sequential")
    batch = loader.next_batch()
    assert batch.inputs.tolist() == [[5, 6, 7, 8, 9]]
    assert batch.targets.tolist() == [[6, 7, 8, 9, 10]]
    assert batch.mask is not None
    assert batch.mask.tolist() == [[False, True, True, False, True]]
    assert batch.n_positions == 3


def test_unmasked_stream_keeps_high_ids_and_has_no_mask() -> None:
    raw = np.array([1, 2, 0x8001, 3], dtype=np.uint16)
    batch = BatchLoader(TokenStream.from_arrays(raw), context=3, batch_size=1).next_batch()
    assert batch.inputs.tolist() == [[1, 2, 0x8001]]
    assert batch.mask is None
    assert batch.n_positions == 3


def test_loader_skips_short_arrays_and_refuses_a_stream_with_no_window() -> None:
    stream = TokenStream.from_arrays(np.arange(3), np.arange(10, 20))
    loader = BatchLoader(stream, context=4, batch_size=4, order="sequential")
    assert loader.n_windows == 2
    assert next(iter(loader)).inputs[:, 0].tolist() == [10, 14]
    with pytest.raises(ConfigError, match="longest of the stream's 2 token arrays has 10 ids"):
        BatchLoader(stream, context=10, batch_size=4)


def test_loader_bad_arguments() -> None:
    stream = TokenStream.from_arrays(np.arange(100))
    with pytest.raises(ConfigError, match="batch_size must be >= 1, got 0"):
        BatchLoader(stream, context=4, batch_size=0)
    with pytest.raises(ConfigError, match="order must be 'random' or 'sequential', got 'shuffled'"):
        BatchLoader(stream, context=4, batch_size=2, order="shuffled")
    loader = BatchLoader(stream, context=4, batch_size=2)
    with pytest.raises(ConfigError, match="window 24 does not exist: the loader has 24 windows"):
        loader.get([0, 24])
    with pytest.raises(ConfigError, match="at least one token array"):
        TokenStream([])
    # a float, a str or a bool for a size failed inside numpy with a TypeError naming nothing, or
    # (True) was a context of 1; numpy's integers are ints
    for kw, name in ((dict(context=1.5), "context length T"), (dict(context="8"), "context length T"),
                     (dict(context=True), "context length T"), (dict(batch_size=2.0), "batch_size"),
                     (dict(stride=2.0), "stride")):
        args = {"context": 4, "batch_size": 2, **kw}
        with pytest.raises(ArgumentTypeError, match=f"{name} must be an int, got"):
            BatchLoader(stream, **args)
        with pytest.raises(ArgumentTypeError, match=f"{name} must be an int, got"):
            BatchIterator(stream, seed=0, **args)
    it = BatchIterator(stream, context=np.int64(4), batch_size=np.int32(2), seed=np.uint64(3),
                       rank=np.int64(1), world_size=np.int64(2))
    assert (it.context, it.seed, it.shard, it.n_shards) == (4, 3, 1, 2) and type(it.seed) is int
    same = BatchIterator(stream, context=4, batch_size=2, seed=3, rank=1, world_size=2)
    assert np.array_equal(next(it).inputs, next(same).inputs) and it.state_dict() == same.state_dict()
    assert json.dumps(it.state_dict())  # plain ints, not numpy's


def test_loader_over_memmaps_keeps_them_memmaps(tmp_path: Path) -> None:
    arrays = []
    for i in range(2):
        path = tmp_path / f"part{i}.u16"
        mm = np.memmap(path, dtype=np.uint16, mode="w+", shape=(257,))
        mm[:] = np.arange(257) + 1000 * i
        mm.flush()
        arrays.append(np.memmap(path, dtype=np.uint16, mode="r"))
    stream = TokenStream.from_arrays(*arrays)
    train, val = stream.split(0.25)
    assert all(isinstance(a, np.memmap) for a in train.arrays + val.arrays)
    loader = BatchLoader(train, context=8, batch_size=4, order="sequential")
    rows = [r for b in loader for r in _window_rows(b.inputs, b.targets)]
    assert rows[0] == list(range(9))
    assert rows[-1] == [1000 + k for k in range(184, 193)]  # train part = first 257 - 64 = 193 ids


def test_token_counts_counts_targets_and_only_masked_ones_in_chat_data() -> None:
    plain = TokenStream.from_arrays(np.array([0, 1, 1, 2]), np.array([3, 1]))
    # every id but each array's first: 1, 1, 2 and 1
    assert plain.token_counts(4).tolist() == [0, 3, 1, 0]
    raw = np.array([4, 1 | MASKBIT, 2, 2 | MASKBIT, 3 | MASKBIT], dtype=np.uint16)
    chat = TokenStream.from_arrays(raw, masked=True)
    assert chat.token_counts(5).tolist() == [0, 1, 1, 1, 0]
    assert chat.max_id() == 4
    assert int(raw[1]) & ID_MASK == 1
    # id 3 is never a target (it starts array 1) but it is still checked against the vocabulary;
    # ids outside it are the input's fault (another tokenizer made it): InputError, not ConfigError
    with pytest.raises(InputError, match="array 1 holds id 3 at token 0, outside the vocabulary of 3 ids"):
        plain.token_counts(3)
    with pytest.raises(InputError, match="array 0 holds id 4 at token 0, outside the vocabulary of 4 ids"):
        chat.token_counts(4)
    # unmasked (never learned) chat ids are checked too
    raw = np.array([0, 1 | MASKBIT, 9, 2 | MASKBIT], dtype=np.uint16)
    unlearned = TokenStream.from_arrays(raw, masked=True)
    assert unlearned.token_counts(10).tolist() == [0, 1, 1] + [0] * 7
    with pytest.raises(InputError, match="holds id 9 at token 2, outside the vocabulary of 5 ids"):
        unlearned.token_counts(5)


def test_token_counts_across_chunk_boundaries() -> None:
    """Counting goes in chunks of _COUNT_CHUNK ids: the first id of the array (only) must be skipped."""
    from mnemo import batches

    n = 2 * batches._COUNT_CHUNK + 3
    a = (np.arange(n) % 7).astype(np.uint16)
    assert TokenStream.from_arrays(a).token_counts(7).tolist() == np.bincount(a[1:], minlength=7).tolist()
    masked = a | np.uint16(MASKBIT) * (np.arange(n) % 2 == 0).astype(np.uint16)
    expected = np.bincount(a[2::2], minlength=7).tolist()  # even positions carry the bit; 0 is no target
    assert TokenStream.from_arrays(masked, masked=True).token_counts(7).tolist() == expected


def test_stream_from_tok_files_documents_and_chats(tmp_path: Path) -> None:
    """The .tok seam: memory-maps the files the tokenizer wrote; a chat file is a masked stream
    whose loader strips MASKBIT; mixing kinds and another tokenizer's file are refused."""
    from mnemo import FingerprintError, Tokenizer
    from mnemo.tokfile import TokWriter

    tok = Tokenizer([(104, 105)])  # 'hi' = 256; <|bos|> 257 ... <|end|> 261
    docs = tmp_path / "docs.tok"
    with TokWriter(docs, tok) as w:
        w.write_doc(np.arange(0, 40, dtype=np.uint16))
    chat = tmp_path / "chat.tok"
    with TokWriter(chat, tok, chat=True) as w:
        w.write_doc(tok.render_conversation([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hi hi"}]))
    stream = TokenStream.from_tok_files([docs], tok)
    assert not stream.masked and stream.n_tokens == 40 and isinstance(stream.arrays[0], np.memmap)
    masked = TokenStream.from_tok_files([chat], tok)
    assert masked.masked
    batch = BatchLoader(masked, batch_size=1, context=6, order="sequential").next_batch()
    assert batch.mask is not None and int(batch.inputs.max()) < MASKBIT
    with pytest.raises(ConfigError, match="mixing masked chat files and document files"):
        TokenStream.from_tok_files([docs, chat], tok)
    with pytest.raises(FingerprintError, match="fingerprint"):
        TokenStream.from_tok_files([docs], Tokenizer([(104, 105), (256, 33)]))
    with pytest.raises(ConfigError, match="no .tok files"):
        TokenStream.from_tok_files([], tok)


# ---- DataLoader use: contiguous batches, the endless resumable iterator, sharding ----


def _loaders(masked: bool) -> list[BatchLoader]:
    raw = np.arange(1, 400, dtype=np.uint16)
    if masked:
        raw = raw | np.where(np.arange(raw.size) % 3 == 0, MASKBIT, 0).astype(np.uint16)
    stream = TokenStream.from_arrays(raw, np.arange(500, 700, dtype=np.uint16), masked=masked)
    return [
        BatchLoader(stream, context=8, batch_size=4, stride=s, order=o)  # type: ignore[arg-type]
        for s in (None, 3)
        for o in ("random", "sequential")
    ]


@pytest.mark.parametrize("masked", [False, True])
def test_batches_are_c_contiguous_so_torch_view_works(masked: bool) -> None:
    """`torch.from_numpy(b.targets).view(-1)` needs a C-contiguous array; the inputs and targets
    were column slices of one [B, T + 1] array (strided), and `.reshape(-1)` of them copied."""
    for loader in _loaders(masked):
        for batch in [loader.next_batch(), *list(loader)[:2], BatchIterator(loader.stream, context=8, batch_size=4).__next__()]:
            arrays = [batch.inputs, batch.targets] + ([] if batch.mask is None else [batch.mask])
            for a in arrays:
                assert a.flags.c_contiguous, a.strides
                assert np.shares_memory(a.reshape(-1), a)  # a view, as torch's .view(-1) requires


def _stream() -> TokenStream:
    return TokenStream.from_arrays(np.arange(0, 1000, dtype=np.uint16), np.arange(2000, 2333, dtype=np.uint16))


def _key(batch: Batch) -> list[tuple[int, ...]]:
    return [tuple(row) for row in np.concatenate([batch.inputs, batch.targets[:, -1:]], axis=1).tolist()]


def _rows(batches: list[Batch]) -> list[tuple[int, ...]]:
    return [r for b in batches for r in _key(b)]


def test_batch_iterator_is_endless_seeded_and_each_epoch_is_every_window_once() -> None:
    """Windows are drawn epoch after epoch, each epoch a new seeded permutation of every window;
    batches are always full: one that reaches the end of an epoch goes on into the next."""
    it = BatchIterator(_stream(), context=16, batch_size=5, stride=8, seed=3)
    n = it.n_windows
    assert n % 5 != 0  # so that batches straddle epochs
    batches = [next(it) for _ in range(3 * n // 5 + 1)]
    assert all(b.targets.shape == (5, 16) and b.inputs.shape == (5, 16) for b in batches)
    rows = _rows(batches)
    epochs = [rows[e * n : (e + 1) * n] for e in range(3)]
    for epoch in epochs:
        assert len(epoch) == n and len(set(epoch)) == n  # every window once
    assert epochs[0] != epochs[1] != epochs[2]  # reshuffled each epoch
    assert set(epochs[0]) == set(_key(b)[0] for b in BatchLoader(_stream(), context=16, batch_size=1, stride=8))
    again = BatchIterator(_stream(), context=16, batch_size=5, stride=8, seed=3)
    assert _rows([next(again) for _ in batches]) == rows
    other = BatchIterator(_stream(), context=16, batch_size=5, stride=8, seed=4)
    assert _rows([next(other) for _ in batches]) != rows


@pytest.mark.parametrize("stop", [0, 1, 16, 17, 33, 60])
def test_batch_iterator_state_restores_exactly_where_it_stopped(stop: int) -> None:
    """N batches, save the state (through JSON: no pickle), restore it in a new object: the next
    batches are the uninterrupted run's, across epoch boundaries (163 windows, rank 1 of
    2 has 81 of them per epoch: batch 16 straddles the first boundary)."""
    def make() -> BatchIterator:
        return BatchIterator(_stream(), context=16, batch_size=5, stride=8, seed=11, rank=1, world_size=2)

    straight = make()
    expected = [_key(next(straight)) for _ in range(stop + 40)]
    first = make()
    for _ in range(stop):
        next(first)
    state = json.loads(json.dumps(first.state_dict()))
    resumed = make()
    resumed.load_state_dict(state)
    assert [_key(next(resumed)) for _ in range(40)] == expected[stop:]


def test_batch_iterator_state_of_another_configuration_is_refused() -> None:
    it = BatchIterator(_stream(), context=16, batch_size=5, seed=1)
    next(it)
    state = it.state_dict()
    for other in (
        BatchIterator(_stream(), context=16, batch_size=6, seed=1),
        BatchIterator(_stream(), context=8, batch_size=5, seed=1),
        BatchIterator(_stream(), context=16, batch_size=5, seed=1, rank=1, world_size=2),
        BatchIterator(TokenStream.from_arrays(np.arange(0, 900, dtype=np.uint16)), context=16, batch_size=5, seed=1),
    ):
        with pytest.raises(ConfigError, match="state"):
            other.load_state_dict(state)
    with pytest.raises(ConfigError, match="state"):
        it.load_state_dict({"version": 99})
    with pytest.raises(ConfigError, match="state"):
        it.load_state_dict({**state, "position": -1})


def test_batch_iterator_bad_shard_arguments() -> None:
    for kwargs, match in [
        ({"rank": 2, "world_size": 2}, "rank"),
        ({"rank": -1}, "rank"),
        ({"world_size": 0}, "world_size"),
        ({"worker": 3, "num_workers": 3}, "worker"),
        ({"num_workers": 0}, "num_workers"),
    ]:
        with pytest.raises(ConfigError, match=match):
            BatchIterator(_stream(), context=16, batch_size=5, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="shards"):
        BatchIterator(TokenStream.from_arrays(np.arange(40)), context=8, batch_size=2, world_size=2, num_workers=4)


_WORKER_MODULE = """
import numpy as np
from mnemo.batches import BatchIterator, TokenStream

def run(rank, world_size, worker, num_workers, steps, out):
    stream = TokenStream.from_arrays(np.arange(0, 1000, dtype=np.uint16), np.arange(2000, 2333, dtype=np.uint16))
    it = BatchIterator(stream, context=16, batch_size=3, stride=8, seed=5, rank=rank, world_size=world_size,
                       worker=worker, num_workers=num_workers)
    rows = []
    for _ in range(steps):
        b = next(it)
        rows.append([tuple(r) for r in np.concatenate([b.inputs, b.targets[:, -1:]], axis=1).tolist()])
    out.put(((rank, worker), rows, it.windows_per_epoch))
"""


def test_sharding_by_worker_and_rank_gives_disjoint_batches_that_cover_the_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 ranks x 3 DataLoader workers = 6 shards, each in its own (spawned) process, as DataLoader
    workers are: one epoch of every shard together is every window exactly once, and no window is
    in two shards."""
    import multiprocessing

    (tmp_path / "mnemo_shard_workers.py").write_text(_WORKER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned children get the parent's sys.path
    import mnemo_shard_workers as w

    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    n = BatchIterator(_stream(), context=16, batch_size=3, stride=8).n_windows
    steps = -(-n // 6 // 3) + 1  # batches of 3 that hold a shard's epoch (n // 6 or n // 6 + 1 windows)
    procs = [
        ctx.Process(target=w.run, args=(rank, 2, worker, 3, steps, out))
        for rank in range(2)
        for worker in range(3)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len({shard for shard, _, _ in results}) == 6
    windows_of = {shard: [r for batch in batches for r in batch][:per_epoch] for shard, batches, per_epoch in results}
    every = [r for rows in windows_of.values() for r in rows]
    assert len(every) == n and len(set(every)) == n  # disjoint, and the union is the epoch
    sizes = sorted(len(rows) for rows in windows_of.values())
    assert sizes[-1] - sizes[0] <= 1  # balanced to one window


def test_a_single_shard_is_the_unsharded_run() -> None:
    one = BatchIterator(_stream(), context=16, batch_size=5, seed=2)
    same = BatchIterator(_stream(), context=16, batch_size=5, seed=2, rank=0, world_size=1, worker=0, num_workers=1)
    assert all(_key(next(one)) == _key(next(same)) for _ in range(30))


def test_uint32_chat_tok_file_in_stream_loader_and_iterator(tmp_path: Path) -> None:
    """A chat .tok of a vocabulary past 32,768 ids is uint32 with the mask on bit 31: bit 15
    is part of an id there.  TokenStream, BatchLoader and BatchIterator strip bit 31 and keep
    bit 15; `raw & ID_MASK` (the uint16 mask) would cut ids 32,768 and up, `id_mask_for`
    gives the mask of the file's vocabulary."""
    from mnemo import Tokenizer, open_tok
    from mnemo.batches import ID_MASK32, id_mask_for
    from mnemo.constants import MASKBIT32
    from mnemo.tokfile import TokWriter

    # 33,000 merges of byte pairs: ids up to 33,255, the chat specials above them
    merges = [(a, b) for a in range(97, 256) for b in range(256)][:33_000]
    tok = Tokenizer(merges, pattern="gpt4")
    assert tok.n_vocab > 32_768 and id_mask_for(tok.n_vocab) == ID_MASK32 and id_mask_for(1000) == ID_MASK
    texts = ["".join(chr(97 + (i * 7 + k) % 26) for k in range(40)) for i in range(30)]
    chats = [[{"role": "user", "content": texts[i]}, {"role": "assistant", "content": texts[i + 1]}] for i in range(0, 30, 2)]
    rendered = [tok.render_conversation(m) for m in chats]
    with TokWriter(tmp_path / "c.tok", tok, chat=True) as w:
        for ids in rendered:
            w.write_doc(ids)
    f = open_tok(tmp_path / "c.tok", tok)
    assert f.header.width == 4 and f.header.maskbit == MASKBIT32 and f.tokens.dtype == np.uint32
    raw = [t for ids in rendered for t in ids]
    plain = [t & id_mask_for(tok.n_vocab) for t in raw]
    learned = [bool(t & MASKBIT32) for t in raw]
    assert any(t >= 32_768 and t & 0x8000 for t in plain), "the test needs learned ids with bit 15 set"
    assert [t & ~MASKBIT32 for t in raw] == plain and plain != [t & ID_MASK for t in raw]

    stream = TokenStream.from_tok_files([tmp_path / "c.tok"], tok)
    assert stream.masked and stream.maskbit == MASKBIT32 and stream.id_mask == ID_MASK32
    assert stream.max_id() == max(plain)
    counts = stream.token_counts(tok.n_vocab)
    assert int(counts.sum()) == sum(learned[1:]) and all(counts[t] > 0 for t, m in zip(plain[1:], learned[1:]) if m)
    T = 16
    loader = BatchLoader(stream, context=T, batch_size=4, order="sequential")
    for k in range(loader.n_windows):
        b = loader.get([k])
        assert b.inputs.tolist() == [plain[k * T : k * T + T]]
        assert b.targets.tolist() == [plain[k * T + 1 : k * T + T + 1]]
        assert b.mask is not None and b.mask.tolist() == [learned[k * T + 1 : k * T + T + 1]]
    it = BatchIterator(stream, context=T, batch_size=2, seed=3)
    for _ in range(5):
        b = next(it)
        assert b.mask is not None
        assert (b.inputs < tok.n_vocab).all() and (b.targets < tok.n_vocab).all()
