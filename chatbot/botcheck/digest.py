"""The fingerprint digest, byte for byte the same as the WebAssembly module's.

FNV-1a 64 over nonce (16 bytes) | seq (u32 LE) | features (i32 LE each) | the message
text as UTF-16 code units (LE), then MurmurHash3's fmix64. It is not a MAC: the browser
holds every input, so anyone can compute it. What it buys is binding: the server
issues a fresh nonce per connection and remembers the last sequence number, so a frame
captured on one connection (or sent twice) does not verify.
"""

from __future__ import annotations

from collections.abc import Sequence

_MASK = 0xFFFFFFFFFFFFFFFF
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


def fingerprint_digest(*, nonce: bytes, seq: int, features: Sequence[int], text: str) -> str:
    """16 lowercase hex digits, as the widget sends them."""
    data = bytearray(nonce)
    data += (seq & 0xFFFFFFFF).to_bytes(4, "little")
    for value in features:
        data += (value & 0xFFFFFFFF).to_bytes(4, "little")
    # UTF-16 code units, like JavaScript's charCodeAt (astral characters are two units).
    data += text.encode("utf-16-le", "surrogatepass")
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    h ^= h >> 33
    return f"{h:016x}"
