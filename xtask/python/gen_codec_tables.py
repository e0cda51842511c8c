"""Generate the codec tables that qdq-ref's tests compare against (ml_dtypes + numpy).

Writes to the directory given as argv[1]:
  decode_tables.txt   "<type> <code> <f32 bits>"   every code of every 2/4/6/8-bit type
  encode_vectors.txt  "<type> <saturate> <f32 bits> <code>"
                      every representable value, every midpoint and its neighbours, specials,
                      through ml_dtypes' RNE cast (saturate=1 clips to +-max first, as the
                      ONNX reference does; float4/float6 always saturate)
  div_vectors.txt     "<type> <x bits> <s bits> <q bits>"  f16 and bf16 divisions
Run by `cargo xtask gen-data`.
"""
import os
import sys

import ml_dtypes
import numpy as np

FLOATS = {
    "e4m3fn": ml_dtypes.float8_e4m3fn,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2": ml_dtypes.float8_e5m2,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
}
BITS = {"e2m1": 4, "e2m3": 6, "e3m2": 6}
INTS = {
    "u8": (np.uint8, 8), "i8": (np.int8, 8),
    "u4": (ml_dtypes.uint4, 4), "i4": (ml_dtypes.int4, 4),
    "u2": (ml_dtypes.uint2, 2), "i2": (ml_dtypes.int2, 2),
}


def f32_bits(v):
    return int(np.array([v], np.float32).view(np.uint32)[0])


def code_of(arr, dtype):
    # ml_dtypes stores sub-byte types one per byte, in the low bits.
    return arr.astype(dtype).view(np.uint8)


def decode_tables(out):
    lines = []
    for name, dt in FLOATS.items():
        n = 1 << BITS.get(name, 8)
        codes = np.arange(n, dtype=np.uint8)
        vals = codes.view(dt).astype(np.float32)
        for c, v in zip(codes, vals):
            lines.append(f"{name} {c} {int(np.array(v).view(np.uint32)):08x}")
    for name, (dt, bits) in INTS.items():
        codes = np.arange(1 << bits, dtype=np.uint8)
        vals = codes.view(dt).astype(np.int32) if bits == 8 else codes.view(dt).astype(np.int32)
        for c, v in zip(codes, vals):
            lines.append(f"{name} {c} {int(v)}")
    with open(os.path.join(out, "decode_tables.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def encode_vectors(out):
    lines = []
    for name, dt in FLOATS.items():
        if name == "e8m0":
            continue
        n = 1 << BITS.get(name, 8)
        vals = np.arange(n, dtype=np.uint8).view(dt).astype(np.float32)
        fin = np.unique(vals[np.isfinite(vals)])
        pos = fin[fin >= 0]
        mids = ((pos[:-1].astype(np.float64) + pos[1:]) / 2).astype(np.float32)
        top = np.float32(pos[-1] + (pos[-1] - pos[-2]) / 2)  # the tie above max
        cands = np.concatenate([pos, mids, [top, top * 2, 1e6, 3e38, 1e-30, 1e-45]]).astype(np.float32)
        cands = np.concatenate([
            cands,
            np.nextafter(cands, np.float32(np.inf)),
            np.nextafter(cands, np.float32(0)),
        ]).astype(np.float32)
        cands = np.concatenate([cands, -cands, [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0]]).astype(np.float32)
        mx = np.float32(pos[-1])
        with np.errstate(all="ignore"):
            for sat in (0, 1):
                src = np.clip(cands, -mx, mx) if sat else cands
                if name in BITS:  # float4/6 always saturate in ml_dtypes
                    src = cands
                codes = code_of(src, dt)
                for v, c in zip(cands, codes):
                    lines.append(f"{name} {sat} {f32_bits(v):08x} {int(c)}")
    with open(os.path.join(out, "encode_vectors.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def div_vectors(out):
    rng = np.random.default_rng(20261121)
    lines = []
    for name, dt in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        bits = rng.integers(0, 1 << 16, size=(20000, 2), dtype=np.uint16)
        # add near-tie cases: x = (k + 0.5) * s computed in f64, then rounded to the type
        s = rng.uniform(0.001, 3.0, 5000)
        k = rng.integers(-300, 300, 5000)
        ties = np.stack([((k + 0.5) * s).astype(dt).view(np.uint16), s.astype(dt).view(np.uint16)], axis=1)
        bits = np.concatenate([bits, ties])
        x = bits[:, 0].view(dt)
        y = bits[:, 1].view(dt)
        with np.errstate(all="ignore"):
            # numpy / ml_dtypes divide in f32 and round to the type: correctly rounded,
            # since 24 >= 2p + 2 for both; an independent path from qdq-ref's f64 one.
            q = x / y
        for a, b, c in zip(bits[:, 0], bits[:, 1], q.view(np.uint16)):
            lines.append(f"{name} {int(a):04x} {int(b):04x} {int(c):04x}")
    with open(os.path.join(out, "div_vectors.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    decode_tables(out)
    encode_vectors(out)
    div_vectors(out)
    print("wrote", out)
