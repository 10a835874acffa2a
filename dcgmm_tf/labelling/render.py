"""How the labelling page shows one sample: an image for image data, a compact feature view otherwise."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def image_png(features: np.ndarray, image_shape: tuple[int, ...], side: int = 112) -> bytes:
    """The flat ``features`` of one image of ``image_shape`` (H, W, C), as a PNG about ``side`` pixels high.

    Values in [0, 1] are shown as they are; others are stretched from their minimum to their maximum.
    """
    image = np.asarray(features, np.float64).reshape(image_shape)
    low, high = float(image.min()), float(image.max())
    if low < 0 or high > 1:
        image = (image - low) / (high - low) if high > low else np.zeros_like(image)
    pixels = np.round(255 * image).astype(np.uint8)
    if pixels.shape[-1] == 1:
        pixels = pixels[..., 0]
    picture = Image.fromarray(pixels)
    scale = max(1, side // image_shape[0])
    picture = picture.resize((image_shape[1] * scale, image_shape[0] * scale), Image.NEAREST)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()


def feature_view(
    features: np.ndarray, mean: np.ndarray, std: np.ndarray, names: list[str] | None = None, top: int = 12
) -> list[dict[str, float | str]]:
    """The ``top`` features of one sample that stand out most from the data set (largest ``|z-score|``), as
    ``{"name", "value", "z"}`` rows, the most unusual first; ``names`` defaults to ``x0, x1, ...``."""
    features = np.asarray(features, np.float64)
    z = (features - mean) / np.where(std > 0, std, 1.0)
    order = np.argsort(-np.abs(z), kind="stable")[:top]
    names = names or [f"x{k}" for k in range(features.size)]
    return [{"name": names[k], "value": float(features[k]), "z": round(float(z[k]), 2)} for k in order]
