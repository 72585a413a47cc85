"""Pictures of an asset's labelled surface cloud (the ``afford show`` command draws these)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: this runs headless in CI and on robots

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from numpy.typing import ArrayLike  # noqa: E402

from .base import Asset  # noqa: E402

# (title, elevation, azimuth) of each panel; azimuth 0 looks from +x, the furniture front.
VIEWS = (("perspective", 25.0, -55.0), ("front (+x)", 0.0, 0.0), ("top", 90.0, -90.0))


def render_labelled_cloud(
    asset: Asset, path: str | Path, scores: ArrayLike | None = None, n: int = 4096,
    q: dict[str, float] | None = None,
) -> Path:
    """Write a PNG of ``asset.surface_cloud(n)`` from three viewpoints.

    Args:
        asset: The asset to draw.
        path: Output PNG path (parent folders are created).
        scores: Optional (n,) per-point scores in [0, 1] for the cloud ``asset.surface_cloud(n)``
            (default seed), drawn as a heat map; without it points are coloured by part label.
        n: Number of surface points.
        q: Joint values to draw the asset at (default closed).

    Returns:
        The path written.
    """
    points, _, labels = asset.surface_cloud(n, q=q)
    parts = asset.info.parts
    if scores is not None:
        scores = np.asarray(scores, dtype=float).reshape(-1)
        if scores.shape != (len(points),):
            raise ValueError(f"scores must have one value per point ({len(points)}), got {scores.shape}")
        if not np.all(np.isfinite(scores)):
            raise ValueError("scores must be finite")
    lo, hi = points.min(axis=0), points.max(axis=0)
    fig = plt.figure(figsize=(5 * len(VIEWS), 5.2))
    cmap = plt.get_cmap("tab10")
    for k, (title, elev, azim) in enumerate(VIEWS):
        ax = fig.add_subplot(1, len(VIEWS), k + 1, projection="3d")
        if scores is None:
            for i, part in enumerate(parts):
                sel = labels == i
                ax.scatter(*points[sel].T, s=2, color=cmap(i % 10), label=part, depthshade=False)
        else:
            art = ax.scatter(*points.T, s=2, c=np.clip(scores, 0, 1), cmap="inferno", vmin=0, vmax=1,
                             depthshade=False)
        ax.view_init(elev=elev, azim=azim)
        ax.set_box_aspect(np.maximum(hi - lo, 1e-3))
        ax.set_title(title)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_zlabel("z")
        ax.tick_params(labelsize=6)
    if scores is None:
        fig.legend(*fig.axes[0].get_legend_handles_labels(), loc="upper right", markerscale=5)
    else:
        fig.colorbar(art, ax=fig.axes, shrink=0.6, label="score")
    fig.suptitle(f"{asset.name} ({len(points)} points)")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
