"""Run tiktoken's own test suite against mnemo: the outside check of the tiktoken drop-in.

    python tools/tiktoken_suite.py TIKTOKEN_CHECKOUT [--engine mnemo|tiktoken] [--fixtures DIR] [-- PYTEST ARGS]

TIKTOKEN_CHECKOUT is a checkout of github.com/openai/tiktoken at the release that is installed
(`pip show tiktoken`; 0.14.0 for docs/tiktoken.md's figures).  This script fetches nothing.  It
copies the checkout's tests/ into a temporary folder (so that `import tiktoken` finds the
installed package, not the checkout's sources without their compiled core) and runs them with
pytest, this file loaded as a plugin (`-p tiktoken_suite`) that patches, before the tests are
collected, every way the suite gets an encoding:

- `tiktoken.get_encoding` (also as `tiktoken.registry.get_encoding`, and the name
  `encoding_for_model` calls) returns mnemo's Tokenizer of that name: mnemo.formats.openai's
  `get_encoding`, reading the rank files below;
- `tiktoken.Encoding(...)`, the constructor, returns mnemo's `formats.openai.encoding(...)`.

`--engine tiktoken` is the control: tiktoken's own Encodings, with its loaders pointed at the
same local files instead of the URLs (tiktoken still checks every SHA-256).  Both engines read
one folder of rank files made from `--fixtures` (default: ../shared/fixtures beside the repo):
cl100k_base and o200k_base from fixtures/tiktoken/*.tiktoken.gz, r50k_base and p50k_base derived
from GPT-2's encoder.json (fixtures/cs336/gpt2_vocab.json) by mnemo's `write_rank_files`, which
writes them only when their SHA-256 is tiktoken's, and GPT-2's vocab.bpe + encoder.json for
tiktoken's own `gpt2` loader.  Exit status: pytest's.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ENGINE = "MNEMO_TIKTOKEN_SUITE_ENGINE"
FILES = "MNEMO_TIKTOKEN_SUITE_FILES"
REPO = Path(__file__).resolve().parents[1]


def prepare_files(fixtures: Path, out: Path) -> None:
    """The rank files both engines read, in `out`."""
    from mnemo.formats.openai import write_rank_files

    encoder_json = fixtures / "cs336" / "gpt2_vocab.json"
    write_rank_files(encoder_json, out)
    for name in ("cl100k_base", "o200k_base"):
        (out / f"{name}.tiktoken").write_bytes(gzip.decompress((fixtures / "tiktoken" / f"{name}.tiktoken.gz").read_bytes()))
    # tiktoken's `gpt2` reads GPT-2's own two files; its vocab.bpe has a version line the fixture lacks
    shutil.copyfile(encoder_json, out / "encoder.json")
    merges = (fixtures / "cs336" / "gpt2_merges.txt").read_text(encoding="utf-8")
    (out / "vocab.bpe").write_text("#version: 0.2\n" + merges, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of github.com/openai/tiktoken")
    parser.add_argument("--engine", choices=("mnemo", "tiktoken"), default="mnemo")
    parser.add_argument("--fixtures", type=Path, default=REPO.parent / "shared" / "fixtures")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = parser.parse_args(argv)
    tests = args.checkout / "tests"
    if not (tests / "test_encoding.py").is_file():
        parser.error(f"{args.checkout}: no tests/test_encoding.py; give the root of a tiktoken checkout")
    with tempfile.TemporaryDirectory(prefix="tiktoken-suite-") as tmp:
        root = Path(tmp)
        shutil.copytree(tests, root / "tests")
        files = root / "files"
        files.mkdir()
        prepare_files(args.fixtures, files)
        env = dict(os.environ)
        env[ENGINE] = args.engine
        env[FILES] = str(files)
        env["TIKTOKEN_CACHE_DIR"] = str(root / "cache")  # the control engine never writes the user's cache
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent), env.get("PYTHONPATH", "")])
        command = [sys.executable, "-m", "pytest", "-p", "tiktoken_suite", "-p", "no:cacheprovider",
                   "-o", "addopts=", "-q", "-rfE", "tests", *args.pytest_args]  # fmt: skip
        print(f"{args.engine}: {' '.join(command)}  (in {root})", flush=True)
        return subprocess.call(command, cwd=root, env=env)


# ---- the plugin: imported by pytest (-p tiktoken_suite) before it collects the tests ----


def _patch_mnemo(files: str) -> None:
    import tiktoken
    import tiktoken.model
    import tiktoken.registry

    from mnemo.formats import openai

    def get_encoding(encoding_name: str) -> Any:
        if not isinstance(encoding_name, str):
            raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
        return openai.get_encoding(encoding_name, files)

    class Encoding:
        """A class, as the tests' annotations need one; building it gives mnemo's Tokenizer."""

        def __new__(cls, name: str, **kwargs: Any) -> Any:
            return openai.encoding(name, **kwargs)

    tiktoken.get_encoding = get_encoding
    tiktoken.registry.get_encoding = get_encoding
    tiktoken.model.get_encoding = get_encoding  # encoding_for_model's, bound at import
    tiktoken.Encoding = Encoding
    tiktoken.list_encoding_names = openai.list_encoding_names


def _patch_tiktoken(files: str) -> None:
    """The control: tiktoken's own loaders, reading the local copies of the files they would download."""
    import tiktoken_ext.openai_public as public
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

    def local(url: str) -> str:
        return os.path.join(files, url.rsplit("/", 1)[1])

    def load_bpe(url: str, expected_hash: str | None = None) -> Any:
        return load_tiktoken_bpe(local(url), expected_hash=expected_hash)

    def load_data_gym(vocab_bpe_file: str, encoder_json_file: str, **hashes: Any) -> Any:
        return data_gym_to_mergeable_bpe_ranks(local(vocab_bpe_file), local(encoder_json_file), **hashes)

    public.load_tiktoken_bpe = load_bpe
    public.data_gym_to_mergeable_bpe_ranks = load_data_gym


if os.environ.get(ENGINE) == "mnemo":
    _patch_mnemo(os.environ[FILES])
elif os.environ.get(ENGINE) == "tiktoken":
    _patch_tiktoken(os.environ[FILES])

if __name__ == "__main__":
    sys.exit(main())
