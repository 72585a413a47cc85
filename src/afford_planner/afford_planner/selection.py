"""The AFFORD-X selection rule: gate on feasibility, rank by the level's terms, or abstain.

A candidate's rank terms depend on the level (each adds to the one before):

    L1  reach r, approach a, clearance c        (feasibility only)
    L2  + function f
    L3  + task t
    L4  + plan p (Stage 2's motion-planning score; see "missing plan" below)

and are combined by one of two rules, with w_k >= 0 the configured weights:

    weighted_sum   S = sum_k w_k x_k / sum_k w_k
    product        S = prod_k x_k            (weights are not used)

The gate decides eligibility before any preference: under ``gate="feasibility"`` a candidate
is eligible when r * a * c >= 0.5 and every ineligible candidate scores 0; under ``"none"``
all are eligible. When no candidate is eligible ``select`` abstains (the episode is a failure)
instead of executing something the arm cannot do. A product already drives a grasp with a
near-zero factor down, so gating it changes little; a weighted sum lets the other terms
outvote reach 0.1, which is where the gate matters (AFFORD-X: +0.68 success at L1 under the
weighted sum, nothing under the product).

Missing plan: Stage 2 fills ``terms["plan"]`` later, and only for the candidates it plans,
typically the eligible ones. At L4, if no eligible candidate has a plan term yet, the ranking
falls back to the L3 terms and ``Selection.notes`` says so; a plan term on some eligible
candidates but not others is an error, since the two groups would be ranked on different terms.

Ties are broken by the lower ``GraspCandidate.index``, so a ranking is a function of the
candidate set alone. ``candidate_set_hash`` names that set, so that every compared method can
be shown to have ranked the same one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

import numpy as np

from afford_core.grasp import GraspCandidate
from afford_planner.terms import FEASIBILITY_TERMS

Level = Literal["L1", "L2", "L3", "L4"]
Combination = Literal["weighted_sum", "product"]
Gate = Literal["feasibility", "none"]

LEVEL_TERMS: dict[str, tuple[str, ...]] = {
    "L1": FEASIBILITY_TERMS,
    "L2": (*FEASIBILITY_TERMS, "function"),
    "L3": (*FEASIBILITY_TERMS, "function", "task"),
    "L4": (*FEASIBILITY_TERMS, "function", "task", "plan"),
}
RANK_TERMS: tuple[str, ...] = LEVEL_TERMS["L4"]
# Scores within this of the gate threshold count as passing: r * a * c is a float product.
_GATE_EPS = 1e-12


@dataclass(frozen=True)
class SelectionConfig:
    """How candidates are ranked: the factorial cell (level x gate x combination).

    Attributes:
        combination: ``"weighted_sum"`` (normalised weighted mean of the level's terms) or
            ``"product"`` (their plain product).
        gate: ``"feasibility"`` (ineligible unless r * a * c >= gate_threshold) or ``"none"``.
        level: ``"L1"`` feasibility terms only, ``"L2"`` + function, ``"L3"`` + task,
            ``"L4"`` + plan.
        weights: Weight per rank term for the weighted sum; terms not named weigh 1.0. Fixed
            before a run, like every threshold. Unused by the product.
        gate_threshold: Minimum r * a * c of an eligible candidate (0.5 in AFFORD-X).
    """

    combination: Combination = "product"
    gate: Gate = "feasibility"
    level: Level = "L3"
    weights: Mapping[str, float] = field(default_factory=dict)
    gate_threshold: float = 0.5

    def __post_init__(self) -> None:
        if self.combination not in ("weighted_sum", "product"):
            raise ValueError(f"combination must be 'weighted_sum' or 'product', got {self.combination!r}")
        if self.gate not in ("feasibility", "none"):
            raise ValueError(f"gate must be 'feasibility' or 'none', got {self.gate!r}")
        if self.level not in LEVEL_TERMS:
            raise ValueError(f"level must be one of {sorted(LEVEL_TERMS)}, got {self.level!r}")
        unknown = set(self.weights) - set(RANK_TERMS)
        if unknown:
            raise ValueError(f"weights name unknown terms {sorted(unknown)}; rank terms are {RANK_TERMS}")
        for k, w in self.weights.items():
            if not (isinstance(w, int | float) and math.isfinite(w) and w >= 0):
                raise ValueError(f"weight of {k!r} must be a finite number >= 0, got {w!r}")
        merged = {k: float(self.weights.get(k, 1.0)) for k in RANK_TERMS}
        object.__setattr__(self, "weights", merged)
        # The L3 fallback of L4 must be well defined too, hence the check on both term sets.
        for level in {self.level, "L3" if self.level == "L4" else self.level}:
            if self.combination == "weighted_sum" and sum(merged[k] for k in LEVEL_TERMS[level]) <= 0:
                raise ValueError(f"weights of the {level} terms {LEVEL_TERMS[level]} sum to 0")
        if not (0.0 < self.gate_threshold <= 1.0):
            raise ValueError(f"gate_threshold must be in (0, 1], got {self.gate_threshold}")

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form, for run configs and the candidate-set hash's ``extra``."""
        return {
            "combination": self.combination,
            "gate": self.gate,
            "level": self.level,
            "weights": dict(self.weights),
            "gate_threshold": self.gate_threshold,
        }


@dataclass(frozen=True)
class Selection:
    """Outcome of ``select``.

    Attributes:
        chosen: The best eligible candidate, or None when the rule abstains.
        ranking: Candidate indices, best first (ineligible ones last, at score 0).
        scores: Final score per candidate index, as computed for this config (the candidates'
            own ``score`` fields are overwritten by the next ranking of the same set).
        eligible: Indices that passed the gate.
        terms_used: Rank terms actually combined (L3's when L4 had no plan term yet).
        reason: Why the rule abstained; empty when it chose.
        notes: Remarks on the ranking (the plan-term fallback).
    """

    chosen: GraspCandidate | None
    ranking: tuple[int, ...]
    scores: dict[int, float]
    eligible: tuple[int, ...]
    terms_used: tuple[str, ...]
    reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def abstained(self) -> bool:
        return self.chosen is None

    @property
    def tied(self) -> tuple[int, ...]:
        """Eligible indices whose score equals the chosen one's (within 1e-12), ascending; the
        rule cannot tell them apart (``select`` takes the first). Empty when it abstains."""
        if self.chosen is None:
            return ()
        best = self.scores[self.chosen.index]
        return tuple(sorted(i for i in self.eligible if abs(self.scores[i] - best) <= 1e-12))


def _check_indices(cands: Sequence[GraspCandidate]) -> None:
    idx = [c.index for c in cands]
    if any(i < 0 for i in idx) or len(set(idx)) != len(idx):
        raise ValueError(
            "candidate indices must be unique and >= 0 (ties are broken by index); "
            "number the set once with candidates.index_candidates"
        )


def _term(cand: GraspCandidate, name: str) -> float:
    if name not in cand.terms:
        raise KeyError(
            f"candidate {cand.index} has no {name!r} term (has {sorted(cand.terms)}); fill it first "
            "(terms.fill_terms, task_constraints.fill_task_terms, Stage 2 for plan)"
        )
    v = float(cand.terms[name])
    if not (0.0 <= v <= 1.0):
        raise ValueError(f"candidate {cand.index}: term {name!r} = {v} is outside [0, 1]")
    return v


def _is_eligible(cand: GraspCandidate, config: SelectionConfig) -> bool:
    if config.gate == "none":
        return True
    feas = math.prod(_term(cand, k) for k in FEASIBILITY_TERMS)
    return feas >= config.gate_threshold - _GATE_EPS


def _terms_for(
    cands: Sequence[GraspCandidate], eligible: Sequence[bool], config: SelectionConfig
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The rank terms to combine, and a note when L4 falls back to L3."""
    terms = LEVEL_TERMS[config.level]
    if config.level != "L4":
        return terms, ()
    has_plan = [("plan" in c.terms) for c, ok in zip(cands, eligible, strict=True) if ok]
    if not any(has_plan):
        return LEVEL_TERMS["L3"], ("plan term not yet available (Stage 2 not run): ranked on the L3 terms",)
    if not all(has_plan):
        missing = [c.index for c, ok in zip(cands, eligible, strict=True) if ok and "plan" not in c.terms]
        raise ValueError(f"eligible candidates {missing} have no plan term while others do; plan all or none")
    return terms, ()


def _combine(values: Sequence[float], names: Sequence[str], config: SelectionConfig) -> float:
    if config.combination == "product":
        return float(math.prod(values))
    w = [config.weights[k] for k in names]
    return float(sum(wi * v for wi, v in zip(w, values, strict=True)) / sum(w))


def _rank(
    cands: Sequence[GraspCandidate], config: SelectionConfig
) -> tuple[list[GraspCandidate], tuple[str, ...], tuple[str, ...]]:
    _check_indices(cands)
    eligible = [_is_eligible(c, config) for c in cands]
    names, notes = _terms_for(cands, eligible, config)
    for cand, ok in zip(cands, eligible, strict=True):
        cand.terms["feasibility"] = math.prod(_term(cand, k) for k in FEASIBILITY_TERMS)
        cand.terms["eligible"] = 1.0 if ok else 0.0
        cand.score = _combine([_term(cand, k) for k in names], names, config) if ok else 0.0
    # Eligible first: an ineligible candidate scores 0, and so can an eligible one (a function
    # term of 0 under the product); the gate must still win that tie.
    return sorted(cands, key=lambda c: (c.terms["eligible"] != 1.0, -c.score, c.index)), names, notes


def score_candidates(cands: Sequence[GraspCandidate], config: SelectionConfig) -> list[GraspCandidate]:
    """Fill each candidate's ``score`` and ``terms["eligible"]`` (0/1) and return them ranked.

    score = 0 for a gated-out candidate, else the level's terms combined by the configured
    rule (module docstring). ``terms["feasibility"]`` is set to r * a * c as well. The ranking
    is by score, descending, then by index ascending.

    Raises:
        ValueError: duplicate or unset indices, a term outside [0, 1], a partial plan term.
        KeyError: a term the level needs is missing.
    """
    return _rank(cands, config)[0]


def select(cands: Sequence[GraspCandidate], config: SelectionConfig) -> Selection:
    """Rank ``cands`` under ``config`` and choose the best eligible one, or abstain.

    The rule abstains when the set is empty or no candidate passes the gate; the reason names
    the best candidate's feasibility factors, so a log shows which factor failed. Under
    ``gate="none"`` the top-ranked candidate is chosen whatever its score.
    """
    if not cands:
        return Selection(None, (), {}, (), LEVEL_TERMS[config.level], reason="no candidates to select from")
    ranked, names, notes = _rank(cands, config)
    ranking = tuple(c.index for c in ranked)
    scores = {c.index: c.score for c in ranked}
    eligible = tuple(c.index for c in ranked if c.terms["eligible"] == 1.0)
    if not eligible:
        best = max(cands, key=lambda c: (c.terms["feasibility"], -c.index))
        factors = ", ".join(f"{k} {best.terms[k]:.3g}" for k in FEASIBILITY_TERMS)
        reason = (
            f"no candidate passes the feasibility gate r*a*c >= {config.gate_threshold:g}; best is "
            f"candidate {best.index} with r*a*c = {best.terms['feasibility']:.3g} ({factors})"
        )
        return Selection(None, ranking, scores, eligible, names, reason=reason, notes=notes)
    return Selection(ranked[0], ranking, scores, eligible, names, notes=notes)


# --------------------------------------------------------------------------- content hash


def _jsonable(value: object, where: str) -> object:
    """Plain JSON form of config-like values; a clear error for anything else."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Enum):
        return _jsonable(value.value, where)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if not math.isfinite(float(value)):
            raise ValueError(f"{where}: non-finite number {value!r} cannot be hashed")
        return float(value) + 0.0  # -0.0 and 0.0 hash alike
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist(), where)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value), where)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v, where) for v in value), key=repr)
    raise TypeError(f"{where}: cannot hash a {type(value).__name__}; pass plain config values")


def _rounded(values: np.ndarray, digits: int) -> list[float]:
    return [round(float(v), digits) + 0.0 for v in np.ravel(values)]


def candidate_set_hash(cands: Sequence[GraspCandidate], extra: Mapping[str, object]) -> str:
    """sha256 hex digest of a candidate set and the configuration that produced it.

    Covers, in list order, each candidate's index, source, TCP position (rounded to 1e-5 m),
    rotation (1e-6) and width (1e-4 m), and ``extra`` (sampler configs, scene id, seed, ...)
    serialised as JSON with sorted keys. Rounding makes the hash survive a float round-trip
    through a log; scores and terms are excluded, since methods differ exactly there.
    """
    payload = {
        "candidates": [
            {
                "index": int(c.index),
                "source": c.source,
                "position": _rounded(c.position, 5),
                "rotation": _rounded(c.rotation, 6),
                "width": round(float(c.width), 4) + 0.0,
            }
            for c in cands
        ],
        "extra": _jsonable(dict(extra), "extra"),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
