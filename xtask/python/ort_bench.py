#!/usr/bin/env python3
"""Times onnxruntime's QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear.

Run by `cargo xtask vs-ort` (see xtask/src/vs_ort.rs); needs onnx (whose `onnx.helper`
writes the one-node models), onnxruntime, numpy and ml_dtypes.

    ort_bench.py [--sizes 1048576,16777216] [--threads 1,2] [--reps 3] [--batch-ms 25] SPEC...

SPEC is `op:from:to:layout[:param]` as written by `qdq_benches::Case::spec`, e.g.
`quantize:f32:u8:per-tensor`, `quantize:f32:i8:per-axis-last:64`,
`quantize:f32:i8:blocked-last:32`, `dequantize:i4:f32:per-tensor`,
`dynamic_quantize:f32:u8:per-tensor`.

Prints JSON lines on stdout:

    {"kind": "info", "onnxruntime": "1.31.1", "python_overhead_us": 6.1, ...}
    {"kind": "result", "spec": ..., "elements": N, "threads": T, "seconds_per_call": s,
     "gelem_per_s": g}
    {"kind": "unsupported", "spec": ..., "reason": "..."}

Sessions: CPU execution provider, graph optimizations off (ORT_DISABLE_ALL), intra-op
threads T, sequential execution. x is a graph input bound once as an OrtValue over a
64-byte aligned buffer, as qdq's (float8 and int4 data through
`OrtValue.ortvalue_from_numpy_with_onnx_type`); scales and zero points are initializers,
as in a QDQ model; outputs are preallocated OrtValues bound through an IOBinding, so a
timed call is `run_with_iobinding` only. Each figure is the median of `--reps` batches of
about `--batch-ms` milliseconds. The per-call Python overhead is measured on a 16-element
QuantizeLinear and reported in the info line.

The data match qdq_benches (benches/src/lib.rs): x uniform in [-4, 4); the scale of a
quantized type is `base_scale(t) * (1 + (k % 8) / 16)` for scale k (per-tensor: k = 0);
zero points for the integer types (128, 32768, 8, 2 for u8, u16, u4, u2; 0 for signed).
"""

import json
import sys
import time

import ml_dtypes
import numpy as np
import onnxruntime as ort
from onnx import helper

# ---------------------------------------------------------------------------------------
# Element types

ONNX_TYPE = {
    "f32": 1, "u8": 2, "i8": 3, "u16": 4, "i16": 5, "i32": 6, "f16": 10, "bf16": 16,
    "e4m3fn": 17, "e4m3fnuz": 18, "e5m2": 19, "e5m2fnuz": 20, "u4": 21, "i4": 22,
    "e2m1": 23, "e8m0": 24, "u2": 25, "i2": 26, "e2m3": 27, "e3m2": 28,
}
BITS = {"u8": 8, "i8": 8, "u16": 16, "i16": 16, "u4": 4, "i4": 4, "u2": 2, "i2": 2,
        "e4m3fn": 8, "e4m3fnuz": 8, "e5m2": 8, "e5m2fnuz": 8, "e2m1": 4, "e2m3": 6, "e3m2": 6}
INT_RANGE = {"u8": (0, 255), "i8": (-128, 127), "u16": (0, 65535), "i16": (-32768, 32767),
             "u4": (0, 15), "i4": (-8, 7), "u2": (0, 3), "i2": (-2, 1)}
ZERO_POINT = {"u8": 128, "u16": 32768, "u4": 8, "u2": 2, "i8": 0, "i16": 0, "i4": 0, "i2": 0}
ML_DTYPE = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
            "e5m2": ml_dtypes.float8_e5m2, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
            "e2m1": ml_dtypes.float4_e2m1fn}
# Operator versions that introduced each type (the model's opset import).
OPSET = {"e2m1": 23, "u2": 25, "i2": 25, "e2m3": 28, "e3m2": 28}
MAX_OPSET = 25  # ai.onnx opsets onnxruntime 1.31 implements


def base_scale(t):
    return {"u8": 0.0315, "i8": 0.0315, "u16": 1.23e-4, "i16": 1.23e-4, "u4": 0.53, "i4": 0.53,
            "u2": 1.9, "i2": 1.9, "e2m1": 0.7, "e2m3": 0.55, "e3m2": 0.15}.get(t, 0.0314)


def scales(t, count):
    k = np.arange(count)
    return (np.float32(base_scale(t)) * (1.0 + (k % 8) / 16.0).astype(np.float32)).astype(np.float32)


def uniform(n, seed):
    return np.random.default_rng(seed).uniform(-4.0, 4.0, n).astype(np.float32)


def pack_codes(t, codes):
    """uint32 codes -> the ONNX packing (sub-byte types LSB first)."""
    bits = BITS[t]
    codes = codes.astype(np.uint64) & ((1 << bits) - 1)
    if bits == 8:
        return codes.astype(np.uint8)
    if bits == 16:
        return codes.astype(np.uint16).view(np.uint8)
    per = 8 // bits if bits in (2, 4) else None
    if per:
        c = np.zeros((len(codes) + per - 1) // per * per, np.uint64)
        c[: len(codes)] = codes
        c = c.reshape(-1, per)
        out = np.zeros(len(c), np.uint64)
        for j in range(per):
            out |= c[:, j] << (bits * j)
        return out.astype(np.uint8)
    # 6-bit: 4 elements in 3 bytes.
    c = np.zeros((len(codes) + 3) // 4 * 4, np.uint64)
    c[: len(codes)] = codes
    c = c.reshape(-1, 4)
    w = c[:, 0] | (c[:, 1] << 6) | (c[:, 2] << 12) | (c[:, 3] << 18)
    b = np.stack([(w >> (8 * j)) & 0xFF for j in range(3)], axis=1).astype(np.uint8)
    return b.reshape(-1)[: (len(codes) * 6 + 7) // 8]


def quantize_codes(t, x, s, zp):
    """Reference-style quantization in numpy (for the DequantizeLinear inputs)."""
    q = x / s
    if t in INT_RANGE:
        lo, hi = INT_RANGE[t]
        return np.clip(np.rint(q) + zp, lo, hi).astype(np.int64).astype(np.uint64) & ((1 << BITS[t]) - 1)
    return q.astype(ML_DTYPE[t]).view(np.uint8).astype(np.uint64)


# ---------------------------------------------------------------------------------------
# Models (onnx.helper)


def tensor_proto(name, dtype, dims, raw):
    return helper.make_tensor(name, ONNX_TYPE[dtype], dims, vals=raw, raw=True)


def value_info(name, dtype, dims):
    return helper.make_tensor_value_info(name, ONNX_TYPE[dtype], dims)


def model_proto(op, inputs, outputs, attrs, input_infos, output_infos, initializers, opset):
    """The serialised one-node model: `attrs` is a dict of integer attributes."""
    node = helper.make_node(op, inputs, outputs, name=op.lower(), **attrs)
    graph = helper.make_graph([node], "bench", input_infos, output_infos, initializer=initializers)
    ir = 10 if opset <= 21 else 11 if opset <= 23 else 12
    model = helper.make_model(graph, producer_name="qdq ort_bench", ir_version=ir,
                              opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


# ---------------------------------------------------------------------------------------
# Cases


class Unsupported(Exception):
    pass


def parse_spec(spec):
    parts = spec.split(":")
    if len(parts) not in (4, 5):
        raise ValueError(f"bad spec {spec!r}")
    op, src, dst, layout = parts[:4]
    param = int(parts[4]) if len(parts) == 5 else None
    return op, src, dst, layout, param


def layout_shapes(layout, param, n):
    """(x dims, scale dims, axis, block_size) of a layout for n elements."""
    if layout == "per-tensor":
        return [n], [], None, None
    if layout == "per-axis-last":
        return [n // param, param], [param], 1, None
    if layout == "per-axis-first":
        return [param, n // param], [param], 0, None
    if layout == "blocked-last":
        return [n // 1024, 1024], [n // 1024, 1024 // param], 1, param
    if layout == "blocked-middle":
        return [n // 4096, 128, 32], [n // 4096, 128 // param, 32], 1, param
    raise ValueError(f"unknown layout {layout}")


def aligned(nbytes, dtype, dims):
    """An uninitialised array of `dims` over a 64-byte aligned buffer (as qdq_benches)."""
    raw = np.empty(nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes].view(dtype).reshape(dims)


def ortvalue(dtype, data, n, dims):
    """(OrtValue, its numpy buffer) of n elements of dtype over a 64-byte aligned copy of
    `data` (packed codes for the quantized types)."""
    if dtype == "f32":
        buf = aligned(4 * n, np.float32, dims)
        buf[...] = data.reshape(dims)
        return ort.OrtValue.ortvalue_from_numpy(buf), buf
    # ortvalue_from_numpy_with_onnx_type reinterprets a same-element-count buffer; for the
    # sub-byte types onnxruntime reads only the packed prefix of it.
    if BITS[dtype] == 16:
        buf = aligned(2 * n, np.uint16, dims)
        buf[...] = np.ascontiguousarray(data).view(np.uint16).reshape(dims)
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buf, ONNX_TYPE[dtype]), buf
    flat = aligned(n, np.uint8, [n])
    flat[:] = 0
    flat[: len(data)] = data
    buf = flat.reshape(dims)
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buf, ONNX_TYPE[dtype]), buf


def output_value(dtype, dims):
    if dtype == "f32":
        return ort.OrtValue.ortvalue_from_shape_and_type(dims, np.float32)
    return ort.OrtValue.ortvalue_from_shape_and_type(dims, ONNX_TYPE[dtype])


def build(spec, n, seed):
    """Returns (model bytes, feeds {name: OrtValue}, outputs {name: OrtValue}, keep-alive)."""
    op, src, dst, layout, param = parse_spec(spec)
    qt = src if op == "dequantize" else dst
    opset = max(21, OPSET.get(qt, 21))
    if opset > MAX_OPSET:
        raise Unsupported(
            f"{qt} needs ai.onnx opset {opset}; onnxruntime {ort.__version__} implements opsets <= {MAX_OPSET}")
    xdims, sdims, axis, block = layout_shapes(layout, param, n)
    count = int(np.prod(sdims)) if sdims else 1
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if block is not None:
        attrs["block_size"] = block
    x = uniform(n, seed)
    keep = []
    if op == "dynamic_quantize":
        model = model_proto("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"], {},
                            [value_info("x", "f32", [n])],
                            [value_info("y", "u8", [n]), value_info("y_scale", "f32", []),
                             value_info("y_zero_point", "u8", [])], [], 21)
        v, buf = ortvalue("f32", x, n, [n])
        feeds = {"x": v}
        outs = {"y": output_value("u8", [n]), "y_scale": output_value("f32", []),
                "y_zero_point": output_value("u8", [])}
        return model, feeds, outs, [buf]
    s = scales(qt, count)
    s_raw = s.tobytes()
    inits = [tensor_proto("scale", "f32", sdims, s_raw)]
    has_zp = qt in ZERO_POINT
    if has_zp:
        zp_codes = np.full(count, ZERO_POINT[qt] & ((1 << BITS[qt]) - 1), np.uint64)
        inits.append(tensor_proto("zero_point", qt, sdims, pack_codes(qt, zp_codes).tobytes()))
    inputs = ["x", "scale"] + (["zero_point"] if has_zp else [])
    if op == "quantize":
        if src != "f32":
            raise ValueError("ort_bench quantizes from f32 only")
        if not has_zp:
            attrs["output_dtype"] = ONNX_TYPE[qt]
        model = model_proto("QuantizeLinear", inputs, ["y"], attrs, [value_info("x", "f32", xdims)],
                            [value_info("y", qt, xdims)], inits, opset)
        v, buf = ortvalue("f32", x, n, xdims)
        feeds = {"x": v}
        outs = {"y": output_value(qt, xdims)}
        keep.append(buf)
    elif op == "dequantize":
        if dst != "f32":
            raise ValueError("ort_bench dequantizes to f32 only")
        # The codes: x quantized with the same scales (expanded to x's shape).
        sx = expand_scales(s, layout, param, xdims).reshape(-1)
        zp = ZERO_POINT.get(qt, 0)
        codes = pack_codes(qt, quantize_codes(qt, x, sx, zp))
        model = model_proto("DequantizeLinear", inputs, ["y"], attrs, [value_info("x", qt, xdims)],
                            [value_info("y", "f32", xdims)], inits, opset)
        v, buf = ortvalue(qt, codes, n, xdims)
        feeds = {"x": v}
        outs = {"y": output_value("f32", xdims)}
        keep.append(buf)
    else:
        raise ValueError(f"unknown op {op}")
    return model, feeds, outs, keep


def expand_scales(s, layout, param, xdims):
    if layout == "per-tensor":
        return np.full(int(np.prod(xdims)), s[0], np.float32)
    if layout == "per-axis-last":
        return np.tile(s, xdims[0])
    if layout == "per-axis-first":
        return np.repeat(s, xdims[1])
    if layout == "blocked-last":
        return np.repeat(s, param)
    if layout == "blocked-middle":
        return np.repeat(s.reshape(xdims[0], -1, 32), param, axis=1)
    raise ValueError(layout)


def session(model, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def bind(sess, feeds, outs):
    b = sess.io_binding()
    for k, v in feeds.items():
        b.bind_ortvalue_input(k, v)
    for k, v in outs.items():
        b.bind_ortvalue_output(k, v)
    return b


def time_calls(sess, binding, reps, batch_s):
    run = sess.run_with_iobinding
    run(binding)
    t = time.perf_counter()
    run(binding)
    one = max(time.perf_counter() - t, 1e-9)
    iters = max(1, min(1 << 20, int(np.ceil(batch_s / one))))
    per = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(iters):
            run(binding)
        per.append((time.perf_counter() - t) / iters)
    return float(np.median(per))


def emit(obj):
    print(json.dumps(obj), flush=True)


def main(argv):
    sizes, threads, reps, batch_ms, specs = [1 << 20, 16 << 20], [1, 2], 3, 25.0, []
    it = iter(argv)
    for a in it:
        if a == "--sizes":
            sizes = [int(v) for v in next(it).split(",")]
        elif a == "--threads":
            threads = [int(v) for v in next(it).split(",")]
        elif a == "--reps":
            reps = int(next(it))
        elif a == "--batch-ms":
            batch_ms = float(next(it))
        elif a.startswith("-"):
            raise SystemExit(f"unknown option {a}")
        else:
            specs.append(a)
    batch_s = batch_ms / 1000.0

    # Per-call overhead of the Python binding: a 16-element QuantizeLinear.
    model, feeds, outs, keep = build("quantize:f32:u8:per-tensor", 16, 1)
    sess = session(model, 1)
    overhead = time_calls(sess, bind(sess, feeds, outs), max(reps, 5), batch_s)
    emit({"kind": "info", "onnxruntime": ort.__version__, "numpy": np.__version__,
          "ml_dtypes": ml_dtypes.__version__, "python": sys.version.split()[0],
          "python_overhead_us": overhead * 1e6})

    for spec in specs:
        for n in sizes:
            try:
                model, feeds, outs, keep = build(spec, n, 7 + n)
                for t in threads:
                    sess = session(model, t)
                    sec = time_calls(sess, bind(sess, feeds, outs), reps, batch_s)
                    emit({"kind": "result", "spec": spec, "elements": n, "threads": t,
                          "seconds_per_call": sec, "gelem_per_s": n / sec / 1e9})
                    del sess
            except Unsupported as e:
                emit({"kind": "unsupported", "spec": spec, "elements": n, "reason": str(e)})
                break
            except Exception as e:  # onnxruntime refusing the model or the types
                reason = " ".join(str(e).split())[:300]
                emit({"kind": "unsupported", "spec": spec, "elements": n, "reason": reason})
                break
            finally:
                keep = None


if __name__ == "__main__":
    main(sys.argv[1:])
