"""PreAfford's learned modules (issue 13): the grasping and pre-grasping critics."""

from pathlib import Path


def weights_dir() -> Path:
    """Where the shipped critics are (``grasp_critic.pt``, ``push_critic.pt``)."""
    return Path(__file__).resolve().parent / "weights"
