"""Object masks from a SAM-family model (``transformers`` ``SamModel``), loaded from a local path.

No segmentation weights ship in any package this stack can install, and nothing may be
downloaded at run time, so the model loads only from a directory the user configures (a
``save_pretrained`` copy of e.g. ``facebook/sam-vit-base``: ``config.json``, the weights and
the processor's ``preprocessor_config.json``, or ``processor_config.json`` as transformers 5
writes it). A missing path, or a directory that is not a SAM checkpoint, is
a clear error naming what was expected; no hub name is ever tried.

Prompts. SAM needs prompts; two modes:

- ``"depth"`` (default): one prompt per object found by the depth segmenter (table-plane
  removal and clustering): its mask's bounding box plus one point on the mask (the mask pixel
  nearest the mask's centroid, so it lies on the object even for a ring-shaped handle view).
  Why default: the depth clusters already say *where* the objects are and how many there are
  (a 3-D fact colour cannot fake), while SAM is better at *where they end* in the image (thin
  handles with depth holes, flying pixels at depth edges, objects touching the table). A few
  prompts cost one decoder pass each after one image encoding, against ~1,000 for a grid, so
  it is also the mode that fits a CPU. Each SAM mask stays tied to its depth cluster; a prompt
  whose mask scores below ``score_threshold`` keeps the depth mask, so no object is lost.
- ``"grid"``: a regular grid of points, no depth needed (transparent or dark objects that the
  depth camera misses). Masks are kept when their predicted IoU reaches ``score_threshold``,
  dropped when they cover more than ``max_area_fraction`` of the image (table, wall), and
  de-duplicated greedily by mask IoU, best score first.

Torch and transformers are imported at module import: import this module only when a SAM source
is configured (``observation.make_mask_source("sam", ...)`` does that lazily).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from transformers import SamModel, SamProcessor

from afford_perception.observation import DepthMaskSource, Frame
from afford_perception.segmentation import DepthSegmenterConfig

PromptMode = Literal["depth", "grid"]


class SamCheckpointError(FileNotFoundError):
    """The configured path is not a local SAM checkpoint directory."""


@dataclass(frozen=True)
class SamConfig:
    """Settings of :class:`SamMaskSource`.

    Attributes:
        checkpoint: Local directory holding a ``save_pretrained`` SAM model and its processor.
        prompts: ``"depth"`` (box + point per depth cluster) or ``"grid"`` (point grid); see
            the module docstring for why depth is the default.
        score_threshold: Lowest predicted IoU (SAM's own quality estimate, in [0, 1]) for a
            mask to be used.
        grid_size: Points per image side in ``"grid"`` mode (``grid_size**2`` prompts).
        max_area_fraction: ``"grid"`` mode: masks covering more of the image than this are the
            table or the background, not an object.
        nms_iou: ``"grid"`` mode: a mask overlapping an already kept one by more than this IoU
            is a duplicate.
        batch_size: Prompts decoded per forward pass (memory bound on a CPU).
        device: Torch device, ``"cpu"`` unless a GPU is configured.
    """

    checkpoint: str
    prompts: PromptMode = "depth"
    score_threshold: float = 0.8
    grid_size: int = 16
    max_area_fraction: float = 0.3
    nms_iou: float = 0.7
    batch_size: int = 32
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not str(self.checkpoint).strip():
            raise SamCheckpointError("SAM checkpoint path is empty: configure a local directory")
        if self.prompts not in ("depth", "grid"):
            raise ValueError(f"prompts must be 'depth' or 'grid', got {self.prompts!r}")
        for name in ("score_threshold", "max_area_fraction", "nms_iou"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 < value <= 1):
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        if self.grid_size < 1 or self.batch_size < 1:
            raise ValueError(
                f"grid_size and batch_size must be >= 1, got {self.grid_size}, {self.batch_size}"
            )


#: The processor's config, as transformers 4 (and the hub's SAM checkpoints) or 5 saves it.
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json")


def check_checkpoint(path: str | Path) -> Path:
    """``path`` as a directory holding a SAM model and processor; a clear error otherwise.

    Raises:
        SamCheckpointError: missing path, not a directory, no ``config.json`` or one whose
            ``model_type`` is not ``"sam"``, no processor config (:data:`PROCESSOR_FILES`), or
            no weights.
    """
    root = Path(path).expanduser()
    hint = (
        "a local directory written by SamModel.save_pretrained and SamProcessor.save_pretrained "
        "(nothing is downloaded)"
    )
    if not root.exists():
        raise SamCheckpointError(f"SAM checkpoint {root} does not exist; expected {hint}")
    if not root.is_dir():
        raise SamCheckpointError(f"SAM checkpoint {root} is a file; expected {hint}")
    config_file = root / "config.json"
    if not config_file.is_file():
        raise SamCheckpointError(f"{root} has no config.json: not a transformers checkpoint; expected {hint}")
    try:
        model_type = json.loads(config_file.read_text()).get("model_type")
    except (json.JSONDecodeError, AttributeError) as exc:
        raise SamCheckpointError(f"{config_file} is not a valid model config: {exc}") from exc
    if model_type != "sam":
        raise SamCheckpointError(f"{root} holds a {model_type!r} model, not SAM (model_type 'sam')")
    if not any((root / name).is_file() for name in PROCESSOR_FILES):
        raise SamCheckpointError(
            f"{root} has no {' or '.join(PROCESSOR_FILES)}: save the SamProcessor beside the model"
        )
    if not any(root.glob("*.safetensors")) and not any(root.glob("*.bin")):
        raise SamCheckpointError(f"{root} has no weights (*.safetensors or *.bin)")
    return root


class SamMaskSource:
    """A :class:`~afford_perception.observation.MaskSource` running SAM on the colour image.

    Args:
        checkpoint: Local SAM checkpoint directory (see :func:`check_checkpoint`).
        depth_config: The depth segmenter's parameters for ``"depth"`` prompts.
        **settings: Other fields of :class:`SamConfig`.
    """

    def __init__(
        self, checkpoint: str | Path, depth_config: DepthSegmenterConfig | None = None, **settings: Any
    ) -> None:
        self.config = SamConfig(checkpoint=str(checkpoint), **settings)
        root = check_checkpoint(self.config.checkpoint)
        # local_files_only: a path that somehow fails to load must never turn into a hub request.
        self.processor = SamProcessor.from_pretrained(root, local_files_only=True)
        # Any: transformers 5 types PreTrainedModel.to through a decorator mypy misreads.
        model: Any = SamModel.from_pretrained(root, local_files_only=True)
        self.model = model.to(self.config.device).eval()
        # Set by transformers' ProcessorMixin at run time, invisible to type checkers.
        self._image_processor: Any = getattr(self.processor, "image_processor")  # noqa: B009
        self._depth = DepthMaskSource(depth_config)

    def segments(self, frame: Frame) -> list[np.ndarray]:
        """(H, W) bool masks, largest first."""
        if self.config.prompts == "depth":
            masks = self._from_depth(frame)
        else:
            masks = self._from_grid(frame)
        return sorted(masks, key=lambda m: -int(m.sum()))

    # --- prompting -------------------------------------------------------------------------

    def _from_depth(self, frame: Frame) -> list[np.ndarray]:
        depth_masks = self._depth.segments(frame)
        if not depth_masks:
            return []
        boxes, points = [], []
        for m in depth_masks:
            rows, cols = np.nonzero(m)
            boxes.append([float(cols.min()), float(rows.min()), float(cols.max()), float(rows.max())])
            k = int(np.argmin((rows - rows.mean()) ** 2 + (cols - cols.mean()) ** 2))
            points.append([[float(cols[k]), float(rows[k])]])
        masks, scores = self.predict(frame.rgb, points=points, boxes=boxes)
        return [
            sam if score >= self.config.score_threshold and sam.any() else depth
            for sam, score, depth in zip(masks, scores, depth_masks, strict=True)
        ]

    def _from_grid(self, frame: Frame) -> list[np.ndarray]:
        h, w = frame.shape
        n = self.config.grid_size
        # Cell centres, so no prompt sits on the image border.
        xs = (np.arange(n) + 0.5) * w / n
        ys = (np.arange(n) + 0.5) * h / n
        points = [[[float(x), float(y)]] for y in ys for x in xs]
        masks, scores = self.predict(frame.rgb, points=points)
        limit = self.config.max_area_fraction * h * w
        order = np.argsort(-scores, kind="stable")
        kept: list[np.ndarray] = []
        for i in order:
            m = masks[i]
            area = int(m.sum())
            if scores[i] < self.config.score_threshold or area == 0 or area > limit:
                continue
            if any(_iou(m, k) > self.config.nms_iou for k in kept):
                continue
            kept.append(m)
        return kept

    def predict(
        self, rgb: np.ndarray, points: list[list[list[float]]], boxes: list[list[float]] | None = None
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """One mask per prompt at the image's full resolution, and SAM's predicted IoU for it.

        Args:
            rgb: (H, W, 3) uint8 image.
            points: Per prompt, a list of (x, y) pixel points on the object.
            boxes: Per prompt, an (x0, y0, x1, y1) pixel box, or ``None`` for points only.

        The image is encoded once; prompts are decoded in batches of ``batch_size``. With one
        prompt SAM gives three candidate masks (part, object, group); the one it scores best
        is used.
        """
        if boxes is not None and len(boxes) != len(points):
            raise ValueError(f"{len(points)} point prompts but {len(boxes)} boxes")
        if not points:
            return [], np.zeros(0)
        device = self.config.device
        # One processor call prepares the image and every prompt (scaled to the model's input
        # size); the tensors are then sliced per batch.
        inputs = self.processor(
            images=rgb,
            input_points=[points],
            input_boxes=None if boxes is None else [boxes],
            return_tensors="pt",
        )
        sizes = (inputs["original_sizes"].cpu(), inputs["reshaped_input_sizes"].cpu())
        with torch.no_grad():
            embeddings = self.model.get_image_embeddings(inputs["pixel_values"].to(device))
        masks: list[np.ndarray] = []
        scores: list[np.ndarray] = []
        step = self.config.batch_size
        for start in range(0, len(points), step):
            prompt = {
                k: inputs[k][:, start : start + step].to(device)
                for k in ("input_points", "input_boxes")
                if k in inputs
            }
            with torch.no_grad():
                out = self.model(image_embeddings=embeddings, multimask_output=True, **prompt)
            full = self._image_processor.post_process_masks(out.pred_masks.cpu(), *sizes)[0].numpy()
            iou = out.iou_scores[0].cpu().numpy()  # (prompts, candidates); full: (prompts, candidates, H, W)
            best = iou.argmax(axis=1)
            masks.extend(full[np.arange(len(best)), best].astype(bool))
            scores.append(iou[np.arange(len(best)), best])
        return masks, np.concatenate(scores).astype(np.float64)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0
