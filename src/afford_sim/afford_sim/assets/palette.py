"""Seeded colours for parts: material-like families, with shades for related parts."""

from __future__ import annotations

import colorsys

import numpy as np

RGBA = tuple[float, float, float, float]

# (hue, saturation, value) ranges of material families; hue (0, 1) means any hue.
CERAMIC = ((0.0, 1.0), (0.15, 0.75), (0.55, 0.95))
PLASTIC = ((0.0, 1.0), (0.5, 0.9), (0.45, 0.9))
METAL = ((0.0, 1.0), (0.0, 0.08), (0.45, 0.85))
WOOD = ((0.05, 0.11), (0.35, 0.7), (0.35, 0.75))
PAPER = ((0.0, 1.0), (0.05, 0.45), (0.8, 1.0))
BANANA = ((0.11, 0.17), (0.55, 0.9), (0.75, 0.95))
# Produce: carrot orange, leaf green (tops, leek leaves), the pale white-green of a leek's stalk.
CARROT = ((0.04, 0.09), (0.75, 0.95), (0.75, 0.95))
LEAF = ((0.22, 0.38), (0.5, 0.9), (0.3, 0.65))
STALK = ((0.14, 0.26), (0.08, 0.35), (0.8, 0.95))
# Bell peppers ripen from green through yellow and orange to red; cardboard is a pale brown.
PEPPER = ((-0.02, 0.33), (0.7, 0.95), (0.5, 0.9))
CARDBOARD = ((0.07, 0.11), (0.3, 0.55), (0.6, 0.85))


def pick(rng: np.random.Generator, family: tuple[tuple[float, float], ...] = PLASTIC) -> RGBA:
    """A colour drawn from a (hue, saturation, value) family."""
    h, s, v = (float(rng.uniform(lo, hi)) for lo, hi in family)
    r, g, b = colorsys.hsv_to_rgb(h % 1.0, s, v)
    return (r, g, b, 1.0)


def shade(rgba: RGBA, factor: float) -> RGBA:
    """Darker (factor < 1) or lighter (factor > 1, blended towards white) version of a colour."""
    rgb = np.asarray(rgba[:3])
    out = rgb * factor if factor <= 1 else rgb + (1 - rgb) * min(factor - 1, 1.0)
    r, g, b = (float(c) for c in np.clip(out, 0, 1))
    return (r, g, b, rgba[3])
