"""SAM mask source: local-only loading and the preprocess -> forward -> postprocess plumbing.

No SAM weights can be installed here, so the real code path runs on a tiny random-weight
``SamConfig`` saved with ``save_pretrained`` and loaded back by path, exactly as a user's
checkpoint is. Mask quality is not asserted (random weights); shapes, types, prompt handling
and the loading errors are.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from afford_perception.observation import Frame, make_mask_source
from afford_perception.sam import SamCheckpointError, SamMaskSource, check_checkpoint

W, H = 96, 72
K = np.array([[90.0, 0.0, (W - 1) / 2], [0.0, 90.0, (H - 1) / 2], [0.0, 0.0, 1.0]])
# Camera 0.6 m above the table looking straight down (image x along -y, image y along -x).
POSE = np.array([[0.0, -1.0, 0.0, 0.5], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.6], [0.0, 0.0, 0.0, 1.0]])


def tiny_sam(path: Path) -> Path:
    """A few-thousand-parameter SAM with the real architecture, saved like a user's checkpoint."""
    import torch
    from transformers import SamConfig, SamImageProcessor, SamModel, SamProcessor

    torch.manual_seed(0)  # the same random weights every run, so the grid test keeps masks
    size = 64  # model input side; the processor resizes and pads every image to it
    config = SamConfig(
        vision_config=dict(
            hidden_size=32,
            output_channels=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=size,
            patch_size=8,
            window_size=4,
            global_attn_indexes=[1],
            mlp_dim=64,
            num_pos_feats=8,
        ),
        prompt_encoder_config=dict(hidden_size=16, image_size=size, patch_size=8, mask_input_channels=4),
        mask_decoder_config=dict(hidden_size=16, mlp_dim=32, num_attention_heads=2, iou_head_hidden_dim=16),
    )
    SamModel(config).save_pretrained(path)
    processor = SamImageProcessor(
        size={"longest_edge": size},
        pad_size={"height": size, "width": size},
        mask_size={"longest_edge": size // 4},
        mask_pad_size={"height": size // 4, "width": size // 4},
    )
    SamProcessor(processor).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_sam(tmp_path_factory.mktemp("sam"))


@pytest.fixture(scope="module")
def frame() -> Frame:
    """A table 0.6 m below the camera with one 10 cm tall box on it."""
    depth = np.full((H, W), 0.6, np.float32)
    depth[25:50, 30:60] = 0.5
    rgb = np.random.default_rng(0).integers(0, 255, (H, W, 3), dtype=np.uint8)
    rgb[25:50, 30:60] = (200, 30, 30)
    return Frame(rgb, depth, K, POSE, 0.0)


def test_checkpoint_errors_name_what_is_wrong(tmp_path: Path, checkpoint: Path) -> None:
    """A user's misconfigured path must give an answer they can act on, and a hub name must
    never turn into a download attempt (there is no network on the robot PC)."""
    with pytest.raises(SamCheckpointError, match="does not exist.*nothing is downloaded"):
        check_checkpoint("facebook/sam-vit-base")
    with pytest.raises(SamCheckpointError, match="empty"):
        SamMaskSource("")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(SamCheckpointError, match="'bert' model, not SAM"):
        check_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "sam"}))
    with pytest.raises(SamCheckpointError, match="preprocessor_config.json"):
        check_checkpoint(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text("{}")
    with pytest.raises(SamCheckpointError, match="no weights"):
        check_checkpoint(tmp_path)
    assert check_checkpoint(checkpoint) == checkpoint


def test_predict_gives_full_resolution_masks_per_prompt(checkpoint: Path, frame: Frame) -> None:
    """Prompts in image pixels must come back as masks over the same image at its own size:
    perception indexes the depth image with them."""
    source = SamMaskSource(checkpoint, batch_size=2)  # three prompts: two batches
    points = [[[40.0, 30.0]], [[10.0, 10.0]], [[80.0, 60.0]]]
    boxes = [[30.0, 25.0, 59.0, 49.0], [0.0, 0.0, 20.0, 20.0], [70.0, 50.0, 95.0, 71.0]]
    masks, scores = source.predict(frame.rgb, points, boxes)
    assert len(masks) == 3 and scores.shape == (3,) and np.all(np.isfinite(scores))
    for m in masks:
        assert m.shape == (H, W) and m.dtype == np.bool_
    masks_points_only, _ = source.predict(frame.rgb, points)
    assert len(masks_points_only) == 3
    with pytest.raises(ValueError, match="3 point prompts but 1 boxes"):
        source.predict(frame.rgb, points, boxes[:1])


def test_depth_prompted_segments_keep_one_mask_per_depth_object(checkpoint: Path, frame: Frame) -> None:
    """With depth prompts every object the depth camera found yields exactly one mask (SAM's,
    or the depth mask when SAM is unsure), so no object can vanish because of a weak model."""
    source = make_mask_source("sam", checkpoint=str(checkpoint))
    assert isinstance(source, SamMaskSource)
    segments = source.segments(frame)
    assert len(segments) == 1
    assert segments[0].shape == (H, W) and segments[0].dtype == np.bool_ and segments[0].any()


def test_grid_prompted_segments_are_filtered_masks(checkpoint: Path, frame: Frame) -> None:
    """Grid mode needs no depth; whatever it keeps must be image-sized, non-empty, below the
    background-area limit and not duplicates of each other."""
    source = SamMaskSource(
        checkpoint, prompts="grid", grid_size=4, score_threshold=1e-6, max_area_fraction=1.0, nms_iou=0.5
    )
    segments = source.segments(frame)
    assert 1 <= len(segments) <= 16
    areas = [int(m.sum()) for m in segments]
    assert areas == sorted(areas, reverse=True)  # largest first, as the protocol says
    for i, m in enumerate(segments):
        assert m.shape == (H, W) and m.dtype == np.bool_ and m.any()
        for other in segments[:i]:
            assert (m & other).sum() / (m | other).sum() <= 0.5
    with pytest.raises(ValueError, match="prompts"):
        SamMaskSource(checkpoint, prompts="everything")
