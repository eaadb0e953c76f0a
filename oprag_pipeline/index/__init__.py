"""Indexing: the vector store the raw and enriched knowledge bases are written to and retrieved from."""
