"""Content-addressed trace results: file hashing and a SQLite store. Never imports torch."""

from .hashing import FileHasher, hash_bytes, hash_json, hash_text
from .store import DB_NAME, SCHEMA_VERSION, CacheHit, CacheStats, claim_directory, ResultCache

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "CacheHit",
    "CacheStats",
    "FileHasher",
    "ResultCache",
    "claim_directory",
    "hash_bytes",
    "hash_json",
    "hash_text",
]
