"""Process-level settings every entry point applies (measured to matter on the 2-core CI VMs)."""

from __future__ import annotations

import contextlib
import os
import random


def set_determinism(seed: int | None = None, threads: int | None = None) -> None:
    """One intra-op thread and flush-to-zero denormals, then seed every RNG.

    Why: on small matmuls intra-op threading ran up to 100x slower here, and after a few RL steps denormal
    floats made backward ~50x slower. Parallelism comes from processes (pytest-xdist), not threads."""
    import numpy as np
    import torch

    torch.set_num_threads(threads or int(os.environ.get("BT_BENCH_THREADS", "1")))
    torch.set_flush_denormal(True)
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)


def pick_device(device: str = "auto") -> str:
    """'auto' -> cuda when available, else cpu; anything else is used as given (validated by torch)."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device_precision(device: str, bf16: bool) -> None:
    """Before any training: the device exists and runs the precision asked for, else a one-line ValueError that
    names the flag to use. bf16 on the CPU works (autocast and bf16 weights are CPU-supported; the sketch hooks
    project in fp32), it is only slower than fp32 on CPUs without native bf16 units."""
    import torch

    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r}: torch sees no CUDA device here; use --device cpu (with --no-bf16 "
                             "for the fp32 path, or keep bf16: it runs on the CPU too, slower)")
        if bf16 and not torch.cuda.is_bf16_supported():
            name = torch.cuda.get_device_name(torch.device(device))
            raise ValueError(f"bf16=True: {name} cannot run bf16; use --no-bf16 (fp32 training)")


@contextlib.contextmanager
def private_rng(seed: int):
    """Seed torch's RNG for a side computation and restore it after, so evaluations and draws never perturb
    the training stream (the run stays bitwise identical whatever is evaluated along the way)."""
    import torch

    state = torch.get_rng_state()
    cuda_state = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.set_rng_state(state)
        if cuda_state is not None:
            torch.cuda.set_rng_state_all(cuda_state)


def load_tokenizer(folder, task=None):
    """The tokenizer of a model folder, loaded the way users load one (``AutoTokenizer``), left-padded as trl pads
    prompts. A folder it cannot load, or one without the pad/EOS tokens generation needs, is a clear error."""
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(folder), padding_side="left")
    except Exception as e:  # noqa: BLE001 - any loader failure is the same user error
        raise ValueError(f"model_path={str(folder)!r}: AutoTokenizer cannot load a tokenizer from this folder "
                         f"({type(e).__name__}: {e}). It must be a HF model folder with its tokenizer files.") from e
    if tok.eos_token_id is None:
        raise ValueError(f"model_path={str(folder)!r}: the tokenizer has no EOS token; generation could not stop")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token  # as trl does for tokenizers without a pad token
    if task is not None and task.chat:
        task.render(tok, [{"role": "user", "content": "x"}])  # no chat template -> clear ValueError
    return tok


def load_model(folder, device: str = "cpu", dtype=None):
    """A freshly loaded model (trl patches ``forward`` of the model it trains: never reuse that one)."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype or torch.float32).to(device)
