"""The defaults the library and the command line share: one table.

The library's signatures read these names (`train(vocab_size=DEFAULT_VOCAB_SIZE, ...)`), and so
do the command line's options and the help texts that state them, so that each default is
written once.  A default that only one function has, and no option shows, stays in that
function's signature.  Names only: no work, no imports (layer 0).
"""

from typing import Final

# ---- training and encoding (mnemo.train, train_from_iterator, Tokenizer, `mnemo train`,
#      `mnemo tokenize`, `mnemo eval`, `mnemo inspect`, `mnemo demo`) ----

#: Ids of a trained vocabulary: the 256 bytes, the merges and the special tokens.
DEFAULT_VOCAB_SIZE: Final = 32768
#: The split pattern of a new vocabulary (one of constants.PATTERNS).
DEFAULT_PATTERN: Final = "mnemonic"
#: The split pattern of a GPT-2 vocabulary read without one (vocab.json + merges.txt, CS336's
#: vocab and merges; formats.gpt2.load_gpt2, Tokenizer.from_vocab_merges, `mnemo convert`).
DEFAULT_GPT2_PATTERN: Final = "gpt2"
#: The tie rule of a new vocabulary (one of constants.TIES).
DEFAULT_TIE: Final = "id"
#: Chunks longer than this are left out of the word counts.
DEFAULT_MAX_CHUNK_BYTES: Final = 256
#: The JSONL field, or Parquet/Arrow column, that holds a record's text.
DEFAULT_TEXT_FIELD: Final = "text"
#: The token files `mnemo tokenize` writes (tokenizing.tokenize_files' `format`).
DEFAULT_TOKEN_FORMAT: Final = "tok"
#: Input bytes per tokenize shard on Ray (RayOptions.shard_bytes, `mnemo tokenize --shard-mb`):
#: big enough that a shard's start-up (a task, a tokenizer from the object store) is noise,
#: small enough that a retried shard costs seconds.
DEFAULT_SHARD_BYTES: Final = 64 << 20

# ---- inspecting and comparing (`mnemo inspect`, `mnemo eval`) ----

#: Rows `mnemo inspect` shows per list (inspect_vocab.format_report's `limit`).
DEFAULT_INSPECT_LIMIT: Final = 20
#: About how much of each corpus `mnemo eval` reads (evaluate.run's `max_bytes`).
DEFAULT_EVAL_MAX_BYTES: Final = 2_000_000

# ---- pretraining the bigram model (bigram.pretrain, `mnemo pretrain`); docs/pretraining.md has
#      the measurements behind them: they beat the unigram baseline on the demo's data and on
#      English at 32,768 ids in under a minute on a busy two-core machine ----

#: The tail of each training array held out for validation when no validation data is given.
DEFAULT_VAL_FRACTION: Final = 0.1
DEFAULT_STEPS: Final = 60
DEFAULT_BATCH: Final = 32
DEFAULT_CONTEXT: Final = 64
DEFAULT_DIM: Final = 64
DEFAULT_LR: Final = 0.05
DEFAULT_OPTIMIZER: Final = "adam"
DEFAULT_SEED: Final = 0
DEFAULT_EVAL_EVERY: Final = 20
DEFAULT_EVAL_WINDOWS: Final = 128
#: Ids of the greedy continuation at the end.
DEFAULT_GENERATE: Final = 40

# ---- the demo (demo.run_demo, `mnemo demo`) ----

#: Bigram steps of the demo: a few seconds at 32,768 ids, and the model is below the unigram
#: baseline by then (docs/pretraining.md has the figures).
DEMO_PRETRAIN_STEPS: Final = 12
