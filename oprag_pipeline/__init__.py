"""oprag: opinion-aware retrieval-augmented generation as a Dagster pipeline."""

__version__ = "0.1.0"
