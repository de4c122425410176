""".tok headers under a checksum and cross-checked (issue 28, items 3 and 4): every bit of a
header is refused when flipped, the fields that follow from each other are compared, the tokens'
CRC-32 is checked by verify_tok, and version 1 files (no checksum) still read."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from mnemo import FormatError, Tokenizer, open_tok
from mnemo.errors import ConfigError
from mnemo.tokfile import TokWriter, read_tok_header, verify_tok


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer([(97, 97), (256, 97)], special_tokens=["<|bos|>", "<|end|>"])


def _written(path: Path, tok: Tokenizer, chat: bool = False) -> bytes:
    with TokWriter(path, tok, chat=chat) as w:
        w.write_doc([258, 257, 98])
        w.write_doc([258, 97])
    return path.read_bytes()


def _with_header_crc(data: bytes) -> bytes:
    return data[:60] + zlib.crc32(data[:60]).to_bytes(4, "little") + data[64:]


@pytest.mark.parametrize("chat", [False, True])
def test_every_bit_of_the_header_is_checked(tmp_path: Path, tok: Tokenizer, chat: bool) -> None:
    """Each of the 512 header bits flipped: open_tok refuses the file (FormatError, a
    FingerprintError for the fingerprint's bytes).  Before version 2, flips in n_docs (24-31),
    n_vocab (48-51) and a chat file's flags read as another file with no error."""
    path = tmp_path / "data.tok"
    good = _written(path, tok, chat)
    accepted = []
    for bit in range(64 * 8):
        bad = bytearray(good)
        bad[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(bad))
        try:
            open_tok(path, tok)
        except FormatError:
            continue
        accepted.append(bit)
    assert accepted == [], f"header bits read with no error: {accepted}"


def test_n_vocab_must_go_with_the_width_and_the_tokenizer(tmp_path: Path, tok: Tokenizer) -> None:
    """n_vocab 70,000 in a 2-byte file, or another size than the tokenizer's: refused even with
    a header CRC computed to match (a hand-made or other tool's header)."""
    path = tmp_path / "data.tok"
    good = _written(path, tok)
    path.write_bytes(_with_header_crc(good[:48] + struct.pack("<I", 70_000) + good[52:]))
    with pytest.raises(FormatError, match=r"offset 48: n_vocab 70000 does not go with 2-byte tokens"):
        read_tok_header(path)
    path.write_bytes(_with_header_crc(good[:48] + struct.pack("<I", 8_192) + good[52:]))
    read_tok_header(path)  # a header alone cannot tell 8,192 from 260 ids
    with pytest.raises(FormatError, match=rf"offset 48: n_vocab 8192, but the tokenizer .* has {tok.n_vocab} ids"):
        open_tok(path, tok)


def test_masked_documents_file_is_refused(tmp_path: Path, tok: Tokenizer) -> None:
    """MASKED (bit 1) without CHAT (bit 0): the loss would see no target at all."""
    path = tmp_path / "data.tok"
    good = _written(path, tok)
    path.write_bytes(_with_header_crc(good[:12] + struct.pack("<I", 2) + good[16:]))
    with pytest.raises(FormatError, match=r"offset 12: flags 0x00000002: masked \(bit 1\) without chat"):
        open_tok(path, tok)
    with pytest.raises(ConfigError, match="a masked .tok is a chat file"):
        TokWriter(tmp_path / "other.tok", tok, masked=True)


def test_tokens_are_under_a_crc(tmp_path: Path, tok: Tokenizer) -> None:
    path = tmp_path / "data.tok"
    good = _written(path, tok)
    assert verify_tok(path).n_tokens == 5
    bad = bytearray(good)
    bad[66] ^= 1  # the second token's low bit
    path.write_bytes(bytes(bad))
    with pytest.raises(FormatError, match=r"offset 52: the tokens' CRC-32 is 0x[0-9a-f]{8}, the header says"):
        verify_tok(path)


def test_version_1_files_still_read(tmp_path: Path, tok: Tokenizer) -> None:
    """A version 1 header (12 reserved zero bytes, no checksum), as mnemo wrote before."""
    ids = [258, 257, 98]
    head = struct.pack("<8sHHIQQ16sI12s", b"MNEMOTOK", 1, 2, 0, 3, 1, bytes.fromhex(tok.fingerprint), tok.n_vocab, bytes(12))
    path = tmp_path / "old.tok"
    path.write_bytes(head + np.array(ids, "<u2").tobytes())
    opened = open_tok(path, tok)
    assert opened.tokens.tolist() == ids and opened.header.version == 1 and opened.header.n_docs == 1
    with pytest.raises(FormatError, match="version 1 .tok has no checksum"):
        verify_tok(path)
    path.write_bytes(head[:60] + b"\x01" + head[61:] + np.array(ids, "<u2").tobytes())
    with pytest.raises(FormatError, match="offset 52: reserved bytes are not zero"):
        open_tok(path, tok)
