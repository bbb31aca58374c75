"""The router's sentence embedding adapted to the shop's intents.

SetFit-style (Tunstall et al. 2022): the shop's labelled examples train a contrastive
loss, so that examples of one intent move together and those of different intents
apart; the classifier head and the out-of-scope score are then fitted on the adapted
embeddings. What is trained is a residual linear map on top of the shipped MiniLM's
sentence embedding, not MiniLM's own weights:

    adapted(x) = normalise(x + W x)        (W: 384 x 384, starts at zero)

Why not MiniLM's weights: on a validation split of BANKING77's training data (10
examples per intent; the test split untouched) fine-tuning the whole MiniLM (2 epochs,
30 steps, 331 s on the shared 2-core machine) moved top-1 0.840 -> 0.844 and routed
accuracy 0.816 -> 0.820; this map, trained in seconds, 0.838 / 0.838. And the adapted
MiniLM would have needed its own forward pass per message (retrieval needs the shipped
model's), and every example re-embedded per retrain; the map costs a 384 x 384
product per message on the embedding retrieval shares, and W (0.6 MB) is stored inside
the classifier, keyed like it by the training data.

The loss is the supervised contrastive loss (Khosla et al. 2020) over batches of
``_BATCH_INTENTS`` intents x ``_PER_INTENT`` examples: every other example of the same
intent in the batch is a positive, every other intent's a negative (unlike in-batch
MultipleNegativesRanking, two examples of one intent are never pushed apart).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from django.conf import settings

logger = logging.getLogger(__name__)

# Chosen on the validation split above (routed accuracy at the default threshold /
# top-1): 60 steps 0.834 / 0.840, 150 steps 0.838 / 0.838, 300 steps 0.828 / 0.828
# (over-fits the 10 examples); temperature 0.1 as 0.05; a two-layer MLP instead of
# the linear map 0.815 / 0.817.
_STEPS = 150
_LEARNING_RATE = 1e-3
_WEIGHT_DECAY = 0.01
_TEMPERATURE = 0.05
_BATCH_INTENTS = 32
_PER_INTENT = 8


def adapter_fit(vectors: np.ndarray, labels: np.ndarray, *, seed: int = 17) -> np.ndarray | None:
    """W (float32, d x d) trained on the examples' embeddings (rows of ``vectors``,
    unit length; zero rows, the Chinese examples', are left out) and their labels.
    None when fewer than two intents have two examples each (no positives).

    The cost is capped: _STEPS steps of one batch each, whatever the number of
    examples, and TIERDESK_ROUTER_FINETUNE_BUDGET_S seconds (a longer run stops early
    and keeps what it learnt)."""
    import torch

    embedded = np.asarray(vectors.any(1), dtype=bool)
    x, y = np.asarray(vectors[embedded], dtype=np.float32), np.asarray(labels)[embedded]
    names, counts = np.unique(y, return_counts=True)
    names = names[counts >= 2]
    if len(names) < 2:
        return None
    keep = np.isin(y, names)
    x, y = x[keep], y[keep]
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    members = {name: np.flatnonzero(y == name) for name in names}
    dim = x.shape[1]
    weight = torch.zeros((dim, dim), requires_grad=True)
    optimiser = torch.optim.AdamW([weight], lr=_LEARNING_RATE, weight_decay=_WEIGHT_DECAY)
    xt, yt = torch.as_tensor(x), torch.as_tensor(np.searchsorted(names, y))
    budget = float(settings.TIERDESK_ROUTER_FINETUNE_BUDGET_S)
    started = time.perf_counter()
    step = 0
    for step in range(1, _STEPS + 1):
        chosen = rng.choice(names, size=min(_BATCH_INTENTS, len(names)), replace=False)
        batch = np.concatenate(
            [
                rng.choice(members[n], size=min(_PER_INTENT, len(members[n])), replace=False)
                for n in chosen
            ]
        )
        rows = xt[batch]
        adapted = torch.nn.functional.normalize(rows + rows @ weight.T, dim=1)
        loss = _supcon_loss(adapted, yt[batch], _TEMPERATURE)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if time.perf_counter() - started > budget:
            logger.warning(
                "embedding adapter stopped by its budget (%.0f s) after %d of %d steps",
                budget,
                step,
                _STEPS,
            )
            break
    logger.info(
        "embedding adapter: %d examples, %d steps in %.1f s",
        len(x),
        step,
        time.perf_counter() - started,
    )
    return np.ascontiguousarray(weight.detach().numpy(), dtype=np.float32)


def _supcon_loss(embeddings: Any, labels: Any, temperature: float) -> Any:
    """Torch tensors in and out (torch is imported only when training)."""
    import torch

    sims = embeddings @ embeddings.T / temperature
    eye = torch.eye(len(labels), dtype=torch.bool)
    sims = sims.masked_fill(eye, float("-inf"))
    log_prob = sims - torch.logsumexp(sims, dim=1, keepdim=True)
    positive = (labels[:, None] == labels[None, :]) & ~eye
    counts = positive.sum(1)
    has = counts > 0
    return (-(log_prob.masked_fill(~positive, 0.0).sum(1)[has] / counts[has])).mean()


def adapter_apply(weight: np.ndarray | None, vectors: np.ndarray) -> np.ndarray:
    """The adapted embeddings of ``vectors`` (one row or a matrix), unit length; zero
    rows (no embedding) stay zero. ``weight`` None: ``vectors`` unchanged."""
    if weight is None:
        return vectors
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    adapted = rows + rows @ weight.T
    norms = np.linalg.norm(adapted, axis=1, keepdims=True)
    adapted = np.divide(adapted, norms, out=np.zeros_like(adapted), where=norms > 0)
    adapted[~rows.any(1)] = 0.0
    return adapted if np.ndim(vectors) == 2 else adapted[0]
