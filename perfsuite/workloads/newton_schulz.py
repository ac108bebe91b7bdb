"""The orthogonalization at the heart of Muon, shared by every workload that uses it (the gpt
workload's hidden matrices, the fast cifar10 recipes' conv filter banks).

Written from Keller Jordan's Muon write-up (2024): a few steps of a quintic Newton-Schulz
iteration replace an update G = U S V^T by approximately U V^T, using matrix products only
(cheap in bf16 on tensor cores), not an SVD.
"""

from __future__ import annotations

import torch

# Coefficients of the quintic iteration X <- a X + (b A + c A^2) X, A = X X^T, as published
# with Muon: chosen for a steep slope at zero, so small singular values grow fast; the
# iteration then leaves singular values spread around 1 (about 0.7-1.2) rather than exactly 1,
# which the write-up reports costs nothing in training.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def newton_schulz(g: torch.Tensor, steps: int, eps: float = 1e-7) -> torch.Tensor:
    """An approximately semi-orthogonal matrix with the row and column spaces of `g` (2-D):
    U V^T of g = U S V^T, up to the spread above. Runs in bfloat16 on a GPU (tensor cores)
    and float32 on a CPU (where bfloat16 products are slow); returns `g`'s dtype. Works on
    the wide orientation (rows <= cols), so A = X X^T is the smaller square."""
    if g.ndim != 2:
        raise ValueError(f"newton_schulz: expected a matrix, got shape {tuple(g.shape)}")
    a, b, c = NS_COEFFICIENTS
    x = g.to(torch.bfloat16 if g.is_cuda else torch.float32)
    x = x / (x.norm() + eps)  # spectral norm <= Frobenius norm <= 1: inside the basin
    wide = x.shape[0] <= x.shape[1]
    if not wide:
        x = x.T
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return (x if wide else x.T).to(g.dtype)


def newton_schulz_flops(rows: int, cols: int, steps: int) -> int:
    """Matrix-product FLOPs of `newton_schulz` on a rows x cols matrix: with m = min, n = max,
    each step does X X^T (2 m m n), A A (2 m m m) and (.) X (2 m m n)."""
    m, n = min(rows, cols), max(rows, cols)
    return steps * (4 * m * m * n + 2 * m * m * m)
