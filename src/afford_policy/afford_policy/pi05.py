"""Pi 0.5 (LeRobot's ``pi05``) from a local checkpoint directory and a local tokenizer.

A Pi 0.5 checkpoint runs through the same :class:`afford_policy.rollout.LeRobotPolicy` as ACT
and Diffusion Policy (so through ``afford policy eval``, the graph's ``policy`` node and
``afford task --policy``); two things differ, and both are here:

- **The tokenizer.** LeRobot's Pi 0.5 preprocessor tokenizes the instruction with PaliGemma's
  tokenizer, which it names by its hub id (``google/paligemma-3b-pt-224``); nothing is
  downloaded here, so the tokenizer comes from a local directory (the files
  ``AutoTokenizer.save_pretrained`` writes): given explicitly, else ``tokenizer/`` inside the
  checkpoint directory, else the directory :data:`TOKENIZER_ENV` names.
- **Weights that fail to load.** ``PI05Policy.from_pretrained`` catches its own loading errors:
  with no weight file it prints a line and returns a randomly initialised model, with a tensor
  missing or of the wrong shape it prints a warning and returns a partly loaded one (LeRobot
  0.4.4 and 0.6.1 alike; ACT raises). :func:`weight_gaps` reads the file's header (names and
  shapes, no tensors), applies LeRobot's own key fixes, and lists every parameter the file does
  not provide; the loader refuses a model with any.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

#: Environment variable naming a local tokenizer directory for every Pi 0.5 checkpoint.
TOKENIZER_ENV = "AFFORD_PI05_TOKENIZER"
#: A checkpoint's own tokenizer directory, looked for inside it.
TOKENIZER_SUBDIR = "tokenizer"
#: Files of which a saved tokenizer has at least one (fast tokenizer, SentencePiece model).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model")


def resolve_tokenizer(policy_dir: Path | str, tokenizer: Path | str | None = None) -> Path:
    """The local tokenizer directory for the Pi 0.5 checkpoint in ``policy_dir`` (module docstring).

    Raises:
        FileNotFoundError: none given and none found, or one that holds no tokenizer.
    """
    if tokenizer is not None:
        candidate, said = Path(tokenizer).expanduser(), "given"
    elif (Path(policy_dir) / TOKENIZER_SUBDIR).is_dir():
        candidate, said = Path(policy_dir) / TOKENIZER_SUBDIR, "inside the checkpoint"
    elif os.environ.get(TOKENIZER_ENV):
        candidate, said = Path(os.environ[TOKENIZER_ENV]).expanduser(), f"named by {TOKENIZER_ENV}"
    else:
        raise FileNotFoundError(
            f"{policy_dir} is a Pi 0.5 checkpoint, which tokenizes the instruction with PaliGemma's "
            "tokenizer, and no local copy was found: give its directory (--tokenizer DIR), put it in "
            f"{Path(policy_dir) / TOKENIZER_SUBDIR}, or name it with {TOKENIZER_ENV}=DIR (a directory "
            "AutoTokenizer.save_pretrained wrote; nothing is downloaded)"
        )
    if not candidate.is_dir() or not any((candidate / f).is_file() for f in _TOKENIZER_FILES):
        raise FileNotFoundError(
            f"the tokenizer directory {said}, {candidate}, holds no {' or '.join(_TOKENIZER_FILES)}"
        )
    return candidate.resolve()


class _DropRootWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.WARNING


@contextlib.contextmanager
def quiet_key_fixes() -> Iterator[None]:
    """Drop the warnings LeRobot's Pi 0.5 key fix-up logs on the root logger for ordinary keys
    (every vision patch embedding, "might need handling"). A key it really skips is still
    caught: :func:`weight_gaps` then reports the tensor as not provided."""
    root, drop = logging.getLogger(), _DropRootWarnings()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def weight_gaps(policy: Any, weights: Path | str) -> list[str]:
    """What ``policy`` (a built ``PI05Policy``) has that the weight file does not provide.

    Each entry names a parameter or buffer that is absent from the file after LeRobot's own key
    fixes (``_fix_pytorch_state_dict_keys``, then the ``model.`` prefix, as its
    ``from_pretrained`` applies them), or whose shape differs. A name the file lacks counts as
    provided when it shares its storage with one the file has (tied weights).
    """
    import torch
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as f:
        shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118 (not a dict)
    # Tensors on the meta device: the fix-up sees names and shapes, no memory is touched.
    meta = {k: torch.empty(s, device="meta") for k, s in shapes.items()}
    with quiet_key_fixes():
        fixed = policy._fix_pytorch_state_dict_keys(meta, policy.config)
    provided = {(k if k.startswith("model.") else f"model.{k}"): tuple(v.shape) for k, v in fixed.items()}
    state = policy.state_dict()
    by_storage: dict[int, list[str]] = {}
    for name, tensor in state.items():
        by_storage.setdefault(tensor.data_ptr(), []).append(name)
    gaps = []
    for name, tensor in state.items():
        if name in provided:
            if provided[name] != tuple(tensor.shape):
                gaps.append(
                    f"{name}: shape {list(provided[name])} in the file, {list(tensor.shape)} in the model"
                )
        elif not any(other in provided for other in by_storage[tensor.data_ptr()]):
            gaps.append(f"{name}: not in the file")
    return gaps


def processor_overrides(policy_dir: Path | str, tokenizer: Path | str | None) -> dict[str, Any]:
    """LeRobot preprocessor overrides that load the instruction tokenizer from a local directory."""
    return {"tokenizer_processor": {"tokenizer_name": str(resolve_tokenizer(policy_dir, tokenizer))}}


# ---------------------------------------------------------------------------------------------
# Checkpoints with random weights: the smoke test and the bench.

#: Sizes of :func:`write_random_checkpoint`. ``standard`` is LeRobot's default Pi 0.5
#: (PaliGemma gemma_2b with a gemma_300m action expert, 4.1 billion parameters, about 17 GB to
#: build in float32); ``small`` keeps every class and code path of it with narrow, shallow
#: layers (tens of millions of parameters, mostly the 257k-token embedding), for machines that
#: cannot hold the real one. LeRobot offers no size below the standard one that runs: its
#: gemma_300m language model fails at the first inference, the vision projection being fixed at
#: 2048 wide.
SIZES = ("small", "standard")


@contextlib.contextmanager
def small_model() -> Iterator[None]:
    """While inside, LeRobot builds (and loads) Pi 0.5 models small (:data:`SIZES`).

    Patches the two places that fix its sizes, ``get_gemma_config`` and the vision tower's
    config, in LeRobot's module; both are restored on leaving. A small checkpoint loads only
    inside this context.
    """
    from lerobot.policies.pi05 import modeling_pi05 as m

    gemma, paligemma = m.get_gemma_config, m.PaliGemmaForConditionalGenerationWithPiGemma

    def small_gemma(variant: str) -> Any:
        # PaliGemma and the action expert attend jointly: same heads and head size, any width.
        return m.GemmaConfig(
            width=64 if variant == "gemma_2b" else 32,
            depth=2,
            mlp_dim=128,
            num_heads=2,
            num_kv_heads=1,
            head_dim=16,
        )

    def small_paligemma(config: Any) -> Any:
        vision = config.vision_config
        vision.hidden_size, vision.intermediate_size = 32, 64
        vision.num_hidden_layers, vision.num_attention_heads = 1, 2
        vision.projection_dim = config.text_config.hidden_size  # LeRobot fixes it at 2048
        return paligemma(config=config)

    m.get_gemma_config, m.PaliGemmaForConditionalGenerationWithPiGemma = small_gemma, small_paligemma
    try:
        yield
    finally:
        m.get_gemma_config, m.PaliGemmaForConditionalGenerationWithPiGemma = gemma, paligemma


def write_tokenizer(out: Path | str, words: Sequence[str]) -> Path:
    """A small word-level tokenizer over ``words`` (and digits, punctuation, Pi 0.5's prompt words),
    saved as ``AutoTokenizer`` loads it: the stand-in for PaliGemma's in tests. Returns ``out``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<bos>", "<eos>"]
    vocab_words = sorted({*words, *"0123456789", ",", ";", ":", "task", "state", "action"})
    vocab = {w: i for i, w in enumerate(specials + vocab_words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    tok.save_pretrained(str(out))
    return Path(out)


def write_random_checkpoint(
    out: Path | str,
    tokenizer: Path | str,
    *,
    cameras: Sequence[str],
    size: str = "small",
    image_size: tuple[int, int] = (64, 64),
    state_dim: int = 8,
    action_dim: int = 8,
    chunk_size: int = 10,
    inference_steps: int = 2,
    seed: int = 0,
) -> Path:
    """A Pi 0.5 pretrained-policy directory with random weights, as ``lerobot-train`` lays one out
    (``config.json``, ``model.safetensors``, both processors with identity normalisation
    statistics), taking an ``afford generate`` dataset's observations (the ``cameras``, feature
    keys of ``image_size`` (width, height) images, and LeRobot's state) and LeRobot's action.
    The preprocessor names PaliGemma's hub id as a trained one does; ``tokenizer`` is only used
    to build it. Returns ``out``.

    Raises:
        ValueError: an unknown size.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    import torch
    from lerobot.configs import FeatureType, PolicyFeature
    from lerobot.policies.pi05.configuration_pi05 import PI05Config
    from lerobot.policies.pi05.modeling_pi05 import PI05Policy
    from lerobot.policies.pi05.processor_pi05 import make_pi05_pre_post_processors
    from lerobot.processor import tokenizer_processor
    from lerobot.utils.constants import ACTION, OBS_STATE
    from transformers import AutoTokenizer

    w, h = image_size
    # Pi 0.5 resizes (with padding) every camera to a square of this side.
    side = max(w, h) if size == "small" else PI05Config.image_resolution[0]
    config = PI05Config(
        device="cpu",
        image_resolution=(side, side),
        chunk_size=chunk_size,
        n_action_steps=chunk_size,
        num_inference_steps=inference_steps,
    )
    config.input_features = {
        **{key: PolicyFeature(FeatureType.VISUAL, (3, h, w)) for key in cameras},
        OBS_STATE: PolicyFeature(FeatureType.STATE, (state_dim,)),
    }
    config.output_features = {ACTION: PolicyFeature(FeatureType.ACTION, (action_dim,))}

    def identity(n: int) -> dict[str, torch.Tensor]:
        return {
            "q01": -torch.ones(n),
            "q99": torch.ones(n),
            "min": -torch.ones(n),
            "max": torch.ones(n),
            "mean": torch.zeros(n),
            "std": torch.ones(n),
        }

    stats = {OBS_STATE: identity(state_dim), ACTION: identity(action_dim)}
    torch.manual_seed(seed)
    out = Path(out)
    with small_model() if size == "small" else contextlib.nullcontext():
        policy = PI05Policy(config)
        policy.save_pretrained(out)
    local = AutoTokenizer.from_pretrained(str(tokenizer))
    hub_lookup = tokenizer_processor.AutoTokenizer
    # The processor names PaliGemma's hub id (as a trained checkpoint's does); hand it the local one.

    class _Local:
        @staticmethod
        def from_pretrained(*_: Any, **__: Any) -> Any:
            return local

    tokenizer_processor.AutoTokenizer = _Local  # type: ignore[misc,assignment]
    try:
        pre, post = make_pi05_pre_post_processors(config, dataset_stats=stats)
    finally:
        tokenizer_processor.AutoTokenizer = hub_lookup  # type: ignore[misc]
    pre.save_pretrained(out)
    post.save_pretrained(out)
    return out
