"""Ed25519 keys: the run key signs weight manifests, a worker key signs rollout batches.

Keys are stored as raw 32-byte values in hex, one per file (private key file mode 0600), so a
volunteer can paste a public key into a config. Ed25519 because signatures are deterministic,
small (64 bytes) and fast to check, and `cryptography` ships it.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from composer_prime.errors import UserError

_RAW = dict(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)


def generate_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def public_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(**_RAW).hex()


def private_hex(key: Ed25519PrivateKey) -> str:
    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    return raw.hex()


def save_private_key(key: Ed25519PrivateKey, path: Path) -> None:
    """Write the private key (hex) readable by the owner only, and `<path>.pub` beside it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(private_hex(key) + "\n")
    path.with_name(path.name + ".pub").write_text(public_hex(key) + "\n")


def load_or_create_private_key(path: Path) -> Ed25519PrivateKey:
    """The key at `path`, generated and saved there on first use (a restarted worker keeps its identity)."""
    path = Path(path)
    if not path.exists():
        save_private_key(generate_key(), path)
    return load_private_key(path)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        raw = bytes.fromhex(Path(path).read_text().strip())
        return Ed25519PrivateKey.from_private_bytes(raw)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read Ed25519 private key {path}: {exc}") from None


def parse_public_key(value: str | bytes) -> Ed25519PublicKey:
    """A public key from its 64 hex characters (or 32 raw bytes)."""
    try:
        raw = bytes.fromhex(value.strip()) if isinstance(value, str) else value
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise UserError(f"not an Ed25519 public key (64 hex characters expected): {exc}") from None


def load_public_key(path_or_hex: str | Path) -> Ed25519PublicKey:
    """A public key given inline as hex, or as a file holding the hex."""
    text = str(path_or_hex)
    if len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text):
        return parse_public_key(text)
    try:
        return parse_public_key(Path(text).read_text())
    except OSError as exc:
        raise UserError(f"cannot read Ed25519 public key {text}: {exc}") from None


def verify(public: Ed25519PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        public.verify(signature, data)
    except InvalidSignature:
        return False
    return True
