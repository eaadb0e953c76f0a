"""Which onnxruntime execution providers the ONNX models (the MiniLM embedder, the aspect model) run on.

A GPU is used when it can be: with the `onnxruntime-gpu` package installed, onnxruntime lists
`CUDAExecutionProvider`, and sessions are created with it first and the CPU provider as the fallback for operators
CUDA lacks. When the package offers CUDA but the machine has no usable device (no driver, no CUDA libraries), the
session cannot be created with it; `create_session` then retries on the CPU alone, with one warning, so the same
install works on a laptop and on a GPU node.

`OPRAG_DEVICE` chooses: `auto` (default: CUDA when offered), `cpu` (never a GPU, e.g. to leave it to another
job), `cuda` (a GPU or a clear error: for a deployment where silently running on CPU would be a mistake).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar, get_args

from oprag_pipeline import config, settings

logger = logging.getLogger(__name__)

DEVICE_ENV = "OPRAG_DEVICE"
CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
DEVICES: tuple[str, ...] = get_args(config.Device)

T = TypeVar("T")


def available_providers() -> list[str]:
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def device_setting() -> str:
    """`OPRAG_DEVICE`: auto (default), cpu or cuda (`settings.device`: the process's hardware, which the aspect model
    and the embedder share)."""
    return settings.device()


def select_providers(available: Sequence[str] | None = None, device: config.Device | None = None) -> list[str]:
    """The providers to create a session with, best first: `[CUDA, CPU]` or `[CPU]`.

    `available` defaults to what the installed onnxruntime offers, `device` to `OPRAG_DEVICE`.
    """
    available = list(available) if available is not None else available_providers()
    device = device or device_setting()
    config.choice(DEVICE_ENV, device)
    if device == "cuda" and CUDA not in available:
        raise RuntimeError(
            f"{DEVICE_ENV}=cuda, but onnxruntime offers only {', '.join(available)}: install onnxruntime-gpu "
            "(in place of onnxruntime) on a machine with an NVIDIA driver, or set OPRAG_DEVICE=auto"
        )
    if device != "cpu" and CUDA in available:
        return [CUDA, CPU]
    return [CPU]


def create_session(make: Callable[[list[str]], T], providers: Sequence[str] | None = None) -> tuple[T, list[str]]:
    """`make(providers)` (an InferenceSession, a fastembed model, ...) and the providers it was made with.

    If making it with a GPU provider fails, it is made again on the CPU alone, unless `OPRAG_DEVICE=cuda` asked for
    the GPU explicitly (then the error stands).
    """
    providers = list(providers) if providers is not None else select_providers()
    try:
        return make(providers), providers
    except Exception as error:
        if providers == [CPU] or device_setting() == "cuda":
            raise
        logger.warning("onnxruntime could not use %s (%s); running on the CPU", providers[0], error)
        return make([CPU]), [CPU]
