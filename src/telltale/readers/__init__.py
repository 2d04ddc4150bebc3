"""Readers shared by sources: incremental JSONL and read-only SQLite."""
