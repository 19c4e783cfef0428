"""Synthetic LLM request batches: input/output length distributions and continuous batching.

Default distribution ("sharegpt"): log-normal input and output lengths with the ShareGPT means reported by
vLLM (Kwon et al., SOSP 2023, Sec. 6.1 / Fig. 11a: mean input 161.31, mean output 337.99 tokens), and
"alpaca" with its means (input 19.31, output 58.45). Both histograms in that figure are long-tailed, hence
log-normal; the shape sigma = 1.0 is a documented choice (the paper gives means, not spreads). Lengths are
at least 1 token, and input + output is capped at NeuPIMs' maximum sequence length of 1024 (Heo et al.,
ASPLOS 2024, Sec. 6) by shortening the output.

Continuous batching (Orca, Yu et al., OSDI 2022): every batch slot serves requests one after another; when a
request has produced its last token, the next request takes its slot (its prefill is not part of the decode
iteration modelled here). The context of a slot at decode iteration t is the input length of its current
request plus the tokens it has generated so far.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from accel_sim.errors import ConfigError

MAX_SEQUENCE = 1024  # NeuPIMs (ASPLOS 2024) Sec. 6: requests up to 1024 tokens


@dataclass(frozen=True)
class LengthDistribution:
    """Log-normal input and output token lengths given by their means and a common shape sigma."""

    name: str
    mean_input: float
    mean_output: float
    sigma: float = 1.0
    max_sequence: int = MAX_SEQUENCE

    def sample(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(input lengths, output lengths) of `n` requests; input + output <= max_sequence."""
        if n < 0 or self.mean_input <= 0 or self.mean_output <= 0 or self.sigma < 0 or self.max_sequence < 2:
            raise ConfigError(f"length distribution '{self.name}' needs positive means, sigma >= 0, "
                              f"max_sequence >= 2 and n >= 0", key_path="requests",
                              fix="give positive mean lengths and a maximum sequence of at least 2 tokens")
        inputs = self._lognormal(rng, self.mean_input, n)
        outputs = self._lognormal(rng, self.mean_output, n)
        inputs = np.minimum(inputs, self.max_sequence - 1)
        outputs = np.minimum(outputs, self.max_sequence - inputs)
        return inputs, outputs

    def _lognormal(self, rng: np.random.Generator, mean: float, n: int) -> np.ndarray:
        mu = math.log(mean) - self.sigma ** 2 / 2  # E[lognormal] = exp(mu + sigma^2 / 2)
        return np.maximum(1, np.rint(rng.lognormal(mu, self.sigma, n))).astype(np.int64)


SHAREGPT = LengthDistribution("sharegpt", 161.31, 337.99)  # vLLM (SOSP 2023) Sec. 6.1, ShareGPT means
ALPACA = LengthDistribution("alpaca", 19.31, 58.45)        # vLLM (SOSP 2023) Sec. 6.1, Alpaca means
DISTRIBUTIONS = {d.name: d for d in (SHAREGPT, ALPACA)}


def continuous_batch(batch: int, iteration: int = 4096, distribution: LengthDistribution = SHAREGPT,
                     seed: int = 0) -> tuple[int, ...]:
    """Context lengths (input + generated tokens, the KV positions each request attends) of the `batch`
    requests running at decode iteration `iteration` of a continuously batched server."""
    if batch < 1 or iteration < 0:
        raise ConfigError(f"a batch needs at least one slot and a non-negative iteration (got batch {batch}, "
                          f"iteration {iteration})", key_path="batch", fix="use batch >= 1 and iteration >= 0")
    rng = np.random.default_rng(seed)
    contexts = []
    for _ in range(batch):
        t = iteration
        while True:
            (inp,), (out,) = distribution.sample(rng, 1)
            if t < out:
                contexts.append(int(inp + t + 1))  # the cache holds input + t generated tokens, plus this one
                break
            t -= out
    return tuple(contexts)
