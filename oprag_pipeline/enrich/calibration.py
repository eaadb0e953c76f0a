"""Fitting a domain's calibration of the aspect-sentiment model from labelled data: the per-class offsets
(``fit_label_bias``) and the residual head (``fit_residual_head``) that ``AspectSentimentModel`` applies at
inference (its ``label_bias`` and ``residual_head``), and the weak labels they are fitted on when no teacher labels
the domain: a star rating of the aspect (``rating_weak_label``) or the model's own answer where VADER agrees
(``lexicon_agreement_label``).

The pipeline fits them at run time (``enrich/ratings.py``: rated aspects and self-training; ``enrich/teacher.py``:
an LLM's labels); nothing here runs at inference. The softmax temperature is fitted once, at training
(``oprag_training.train_aspect_model.fit_temperature``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oprag_pipeline.enrich.aspect_model import LABELS, NEUTRAL

# The offsets fitted by `fit_label_bias` get a unit-variance Gaussian prior (penalty ||b||^2 / 2): a shift of one
# logit is already large (it moves a 50/50 call to 73/27), so a few hundred teacher labels decide, a handful cannot.
LABEL_BIAS_PRIOR_VARIANCE = 1.0


def fit_label_bias(probs: np.ndarray, labels: Sequence[int]) -> np.ndarray:
    """Per-class log-probability offsets that best explain a labelled in-domain sample (a teacher's labels: an LLM's,
    or gold as an oracle stand-in), for ``probabilities``' output ``probs`` (n, 3).

    The lightest domain adaptation there is: the network and its features stay as they are, only how often each
    class is expected in this domain is learnt (3 numbers, centred to sum 0). Maximum a posteriori under the
    Gaussian prior of ``LABEL_BIAS_PRIOR_VARIANCE``; scipy's L-BFGS on a smooth convex objective.
    """
    from scipy.optimize import minimize

    log_p = np.log(np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1.0))
    y = np.asarray(labels, dtype=np.int64)

    def objective(b: np.ndarray) -> tuple[float, np.ndarray]:
        z = log_p + b
        z = z - z.max(axis=1, keepdims=True)
        q = np.exp(z)
        q /= q.sum(axis=1, keepdims=True)
        nll = -float(np.log(q[np.arange(len(y)), y] + 1e-12).sum())
        grad = q.sum(axis=0) - np.bincount(y, minlength=len(LABELS))
        return nll + 0.5 * float(b @ b) / LABEL_BIAS_PRIOR_VARIANCE, grad + b / LABEL_BIAS_PRIOR_VARIANCE

    if len(y) == 0:
        return np.zeros(len(LABELS))
    result = minimize(objective, np.zeros(len(LABELS)), jac=True, method="L-BFGS-B")
    return result.x - result.x.mean()


def rating_weak_label(rating: float, scale_max: float = 5.0, scale_min: float = 1.0) -> int:
    """A weak polarity label from a star rating of the aspect (the corpus's own ratings as a teacher for
    ``fit_label_bias``): the upper two fifths of the scale positive, the lower two fifths negative, the middle fifth
    neutral, i.e. 4-5 / 1-2 / 3 stars on a 1-5 scale, the usual reading of a five-point scale."""
    position = (float(rating) - scale_min) / (scale_max - scale_min)
    if position > 0.6 - 1e-9:
        return LABELS.index("positive")
    if position < 0.4 + 1e-9:
        return LABELS.index("negative")
    return LABELS.index("neutral")


def lexicon_agreement_label(sentiment: str, clause_compound: float, sentence_compound: float) -> int | None:
    """A self-training label for one prediction of the unadapted model, or None when the two readings disagree.

    Self-training on the model's own answers alone teaches it its own mistakes (and, measured on MEMD-ABSA, its
    neutral answers); a second, independent view filters them (co-training): a polar answer is kept when VADER reads
    the mention's clause the same way by its documented threshold, a neutral one only when VADER finds neither the
    clause nor the whole sentence evaluative, so only plain statements of fact teach "neutral".
    """
    from oprag_pipeline.enrich.cues import vader_polarity

    lexicon = vader_polarity(clause_compound)
    if sentiment == "neutral":
        return NEUTRAL if lexicon == "neutral" and vader_polarity(sentence_compound) == "neutral" else None
    return LABELS.index(sentiment) if lexicon == sentiment else None


# The residual head's weights get a Gaussian prior whose variance makes the logit change it can cause, for features
# of unit scale, as large as the offsets' (LABEL_BIAS_PRIOR_VARIANCE) in total: variance 1 / (number of features).
def fit_residual_head(
    features: np.ndarray, probs: np.ndarray, labels: Sequence[int], learn_bias: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """A domain's residual head: ``log p + features @ W + b`` fitted to a labelled in-domain sample (a teacher's
    labels), ``probs`` being ``probabilities``' output before adaptation.

    ``fit_label_bias`` learns b alone (how often each class occurs in the domain); W also learns which directions of
    the encoder's own features mean what in this domain (a fine-tune of the last layer, the encoder frozen), with no
    torch: MAP under Gaussian priors (b: ``LABEL_BIAS_PRIOR_VARIANCE``; W: that over the feature count, so both
    allow about one logit), scipy's L-BFGS on a smooth convex objective. Features are standardised with the sample's
    own mean and scale first, folded back into W and b.

    ``learn_bias=False`` keeps b at zero on the standardised features: the head then moves no class up or down at
    the sample's mean, it only learns what the feature directions mean. That is what self-training needs: its
    labels are the model's own answers that a lexicon agrees with, a sample whose class shares say how often the two
    agree, not how often each class occurs (measured: a learnt bias on them turned factual statements polar).
    """
    from scipy.optimize import minimize

    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    n, d = x.shape
    c = len(LABELS)
    if n == 0:
        return np.zeros((d, c)), np.zeros(c)
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    z_x = (x - mean) / scale
    log_p = np.log(np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1.0))
    onehot = np.eye(c)[y]
    w_var = LABEL_BIAS_PRIOR_VARIANCE / d

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = theta[: d * c].reshape(d, c)
        b = theta[d * c :]
        z = log_p + z_x @ w + b
        z = z - z.max(axis=1, keepdims=True)
        q = np.exp(z)
        q /= q.sum(axis=1, keepdims=True)
        nll = -float(np.log(q[np.arange(n), y] + 1e-12).sum())
        g = q - onehot
        grad_w = z_x.T @ g + w / w_var
        # b starts at zero and, with no gradient, stays there
        grad_b = g.sum(axis=0) + b / LABEL_BIAS_PRIOR_VARIANCE if learn_bias else np.zeros(c)
        penalty = 0.5 * float((w * w).sum()) / w_var + 0.5 * float(b @ b) / LABEL_BIAS_PRIOR_VARIANCE
        return nll + penalty, np.concatenate([grad_w.ravel(), grad_b])

    result = minimize(objective, np.zeros(d * c + c), jac=True, method="L-BFGS-B")
    w = result.x[: d * c].reshape(d, c) / scale[:, None]
    b = result.x[d * c :] - mean @ w
    return w, b - b.mean()
