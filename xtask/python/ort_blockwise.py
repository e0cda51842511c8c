#!/usr/bin/env python3
"""onnxruntime's blockwise 4-bit weight quantizer, for `cargo xtask ort-blockwise`.

    ort_blockwise.py OUT_DIR [--quick]

For each case `K N block symmetric seed` it draws a float32 weight [K, N] (normal values,
with exact zeros, all-zero columns, ties, NaN, ±inf and tiny values mixed in), runs
onnxruntime's `quantize_qdq_matmul_4bits` (the function `matmul_nbits_quantizer` calls for
QDQ output: blocks of `block` rows along K, per column) and writes

    OUT_DIR/case<i>.x        the weight, little-endian f32, row-major
    OUT_DIR/case<i>.packed   the int4 / uint4 codes, [K, N] row-major, two per byte
    OUT_DIR/case<i>.scales   f32 [ceil(K / block), N]
    OUT_DIR/case<i>.zp       uint4 zero points (asymmetric only)

and one JSON line per case on stdout. Then it times the function on a 4096 x 4096 weight
with blocks of 32 (the median of --reps calls) and prints a "timing" line.
"""

import json
import os
import sys
import time

import numpy as np
import onnxruntime
from onnxruntime.capi._pybind_state import quantize_qdq_matmul_4bits

CASES = [
    (64, 16, 32, True, 1), (64, 16, 32, False, 2), (33, 5, 16, True, 3), (33, 5, 16, False, 4),
    (100, 130, 32, True, 5), (100, 130, 32, False, 6), (256, 64, 128, True, 7), (256, 64, 128, False, 8),
    (17, 3, 8, True, 9), (17, 3, 8, False, 10), (512, 96, 64, True, 11), (512, 96, 64, False, 12),
    (31, 7, 32, True, 13), (31, 7, 32, False, 14), (96, 1, 16, False, 15), (1, 9, 32, True, 16),
]


def weight(k, n, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((k, n)).astype(np.float32) * np.float32(10 ** rng.uniform(-3, 2))
    mask = rng.random((k, n))
    w[mask < 0.05] = 0.0
    w[(mask >= 0.05) & (mask < 0.06)] = np.float32(2.5)
    w[(mask >= 0.06) & (mask < 0.07)] = np.float32(-7.5)
    if n > 2:
        w[:, 1] = 0.0  # an all-zero column: all-zero blocks
        w[k // 2, 2] = np.float32(1e-40)
    if k * n > 200:
        w.flat[rng.integers(0, k * n)] = np.nan
        w.flat[rng.integers(0, k * n)] = np.inf
        w.flat[rng.integers(0, k * n)] = -np.inf
    return np.ascontiguousarray(w)


def quantize(w, block, symmetric):
    k, n = w.shape
    k_blocks = (k + block - 1) // block
    packed = np.zeros((k * n + 1) // 2, dtype="uint8")
    zp = np.zeros((n * k_blocks + 1) // 2, dtype="uint8")
    scales = np.zeros((k_blocks, n), dtype=np.float32)
    quantize_qdq_matmul_4bits(packed, w, scales, zp, block, n, k, symmetric)
    return packed, scales, zp


def main():
    out = sys.argv[1]
    quick = "--quick" in sys.argv
    os.makedirs(out, exist_ok=True)
    print(json.dumps({"kind": "info", "onnxruntime": onnxruntime.__version__}), flush=True)
    for i, (k, n, block, sym, seed) in enumerate(CASES):
        w = weight(k, n, seed)
        packed, scales, zp = quantize(w, block, sym)
        base = os.path.join(out, f"case{i}")
        w.astype("<f4").tofile(base + ".x")
        packed.tofile(base + ".packed")
        scales.astype("<f4").tofile(base + ".scales")
        zp.tofile(base + ".zp")
        print(json.dumps({"kind": "case", "index": i, "k": k, "n": n, "block": block, "symmetric": sym}), flush=True)
    k = n = 4096
    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    for sym in (True, False):
        # Outputs allocated once (as the Rust side times qdq): the function's own work, its
        # thread pool included.
        packed, scales, zp = quantize(w, 32, sym)
        times = []
        for _ in range(3 if quick else 7):
            t = time.perf_counter()
            quantize_qdq_matmul_4bits(packed, w, scales, zp, 32, n, k, sym)
            times.append(time.perf_counter() - t)
        s = sorted(times)[len(times) // 2]
        print(json.dumps({"kind": "timing", "k": k, "n": n, "block": 32, "symmetric": sym, "seconds": s}), flush=True)


if __name__ == "__main__":
    main()
