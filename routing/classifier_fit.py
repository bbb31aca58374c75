"""Fitting the classifier's features and logistic regression (the vectorizer, the
regularisation, the weights as the router reads them)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion

from routing.classifier import EMBEDDING_WEIGHT, features_text
from routing.normalise import text_normalise

# Weak regularisation: with ~100 examples per intent a strongly regularised model
# spreads its probability so thin that typical messages fall under the clarify
# threshold (0.45) and get a needless question. Tier accuracy in 4-fold CV on the
# seed utterances (rules included): C=20 about 0.81, C=300 0.875, C=1000 0.88.
C_TFIDF = 1000.0
# With sentence embeddings beside the TF-IDF features (TIERDESK_ROUTER_EMBEDDINGS).
# Chosen on BANKING77 (the development benchmark, never on heldout.tsv), top-1 with 10
# examples per intent / all: embedding columns x 2 and C=30: 0.854 / 0.941 (C=100:
# 0.849 / 0.936; C=10: 0.853; weight 1.5: 0.845-0.847, 2.5: 0.844-0.850, 3: 0.838-0.848
# over C 30-300; TF-IDF alone 0.708 / 0.913).
C_EMBEDDINGS = 30.0


def vectorizer_build() -> FeatureUnion:
    return FeatureUnion(
        [
            (
                "chars",
                TfidfVectorizer(
                    analyzer="char_wb",
                    ngram_range=(1, 4),
                    sublinear_tf=True,
                    lowercase=False,  # text_normalise already case-folded
                    dtype=np.float64,
                ),
            ),
            # Whole words and word pairs ("ship internationally", "kill the order")
            # on top of the characters. 4-fold CV on the training utterances: English
            # tier accuracy 0.899 -> 0.916, Chinese 0.892 -> 0.882 (a CJK run without
            # spaces is one "word", so Chinese gains nothing); see docs/routing.md.
            (
                "words",
                TfidfVectorizer(
                    analyzer="word",
                    ngram_range=(1, 2),
                    sublinear_tf=True,
                    lowercase=False,
                    token_pattern=r"(?u)\b\w+\b",
                    dtype=np.float64,
                ),
            ),
        ]
    )


def model_fit(
    texts: list[str], y: np.ndarray, vectors: np.ndarray | None
) -> tuple[FeatureUnion, LogisticRegression, Any]:
    """(vectorizer, model, the examples' TF-IDF features)."""
    vectorizer = vectorizer_build()
    tfidf = vectorizer.fit_transform([features_text(text_normalise(t)) for t in texts])
    if vectors is None:
        model = tfidf_fit(tfidf, y)
    else:
        x = sparse.hstack([tfidf, sparse.csr_matrix(EMBEDDING_WEIGHT * vectors)]).tocsr()
        model = LogisticRegression(C=C_EMBEDDINGS, max_iter=3000, class_weight="balanced")
        model.fit(x, y)
    return vectorizer, model, tfidf


def tfidf_fit(x: Any, y: np.ndarray) -> LogisticRegression:
    # class_weight: a busy intent with many examples must not drown a small one.
    # newton-cg: same optimum as the default lbfgs, ~5x faster on this weakly
    # regularised problem (1.3 s vs 7 s for ~1100 utterances on 2 cores).
    model = LogisticRegression(
        C=C_TFIDF, max_iter=3000, class_weight="balanced", solver="newton-cg"
    )
    model.fit(x, y)
    return model


def weights_of(model: LogisticRegression) -> tuple[np.ndarray, np.ndarray]:
    """(features x intents weights, bias) of a fitted model; two intents as two
    columns (see calibration.two_columns)."""
    coef, intercept = model.coef_, model.intercept_.copy()
    if coef.shape[0] == 1:
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.array([0.0, intercept[0]])
    return np.ascontiguousarray(coef.T), intercept
