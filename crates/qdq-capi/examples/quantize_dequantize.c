/*
 * quantize_dequantize.c: qdq's C ABI in a few calls.
 *
 *   cargo build --release -p qdq-capi
 *   cc -std=c11 -Iinclude crates/qdq-capi/examples/quantize_dequantize.c \
 *      target/release/libqdq.a -lpthread -ldl -lm -o quantize_dequantize
 *
 * 1. The slice API: a float buffer to int8 (one scale and zero point for the whole
 *    buffer) and back.
 * 2. The tensor API: an ONNX QuantizeLinear node, its output allocated from what
 *    qdq_quantize_linear_info says it needs.
 */
#include "qdq.h"

#include <stdio.h>
#include <stdlib.h>

/* Every qdq call returns a status; on failure qdq_last_error() says what was wrong. */
static int ok(qdq_status st, const char *what) {
  if (st != QDQ_OK) {
    fprintf(stderr, "%s failed: %s: %s\n", what, qdq_status_name(st), qdq_last_error());
    return 0;
  }
  return 1;
}

int main(void) {
  printf("qdq %s\n", qdq_version());

  /* 1. Slice API: y = saturate(round(x / scale) + zero_point), then (y - zero_point) * scale. */
  enum { N = 6 };
  const float x[N] = {-1.0f, -0.26f, 0.0f, 0.25f, 0.5f, 40.0f};
  const float scale = 0.1f;
  const int8_t zero_point = -3;
  qdq_params params = {0}; /* zeroed: per-tensor, saturating, division in the scale's type */
  params.scale_dtype = QDQ_FLOAT;
  params.scales = &scale;
  params.n_scales = 1;
  params.zero_point_dtype = QDQ_INT8;
  params.zero_points = &zero_point;
  params.n_zero_points = 1;

  int8_t q[N];
  float back[N];
  /* cfg NULL: the best ISA of this CPU, on the calling thread. */
  if (!ok(qdq_quantize(NULL, QDQ_FLOAT, x, N, &params, QDQ_INT8, q, sizeof q), "qdq_quantize") ||
      !ok(qdq_dequantize(NULL, QDQ_INT8, q, N, &params, QDQ_FLOAT, back, sizeof back),
          "qdq_dequantize")) {
    return 1;
  }
  for (int i = 0; i < N; i++) {
    printf("x = %7.3f  ->  q = %4d  ->  %7.3f\n", (double)x[i], q[i], (double)back[i]);
  }

  /* 2. Tensor API: QuantizeLinear (ai.onnx opset 21), x of shape [2, 3], one scale per
        column (axis 1), no zero point, output type int4 (attribute output_dtype). */
  const int64_t x_shape[2] = {2, 3}, s_shape[1] = {3};
  const float xs[6] = {0.5f, 1.0f, -3.0f, 2.0f, -8.0f, 100.0f};
  const float scales[3] = {0.5f, 1.0f, 2.0f};
  const qdq_attribute attrs[2] = {{"axis", 1}, {"output_dtype", QDQ_INT4}};
  const qdq_node node = {"", 21, attrs, 2};
  const qdq_tensor xt = {QDQ_FLOAT, 2, x_shape, xs};
  const qdq_tensor st = {QDQ_FLOAT, 1, s_shape, scales};

  qdq_tensor_info info;
  if (!ok(qdq_quantize_linear_info(&node, &xt, &st, NULL, &info), "qdq_quantize_linear_info")) {
    return 1;
  }
  uint8_t *y = malloc(info.bytes);
  if (y == NULL) return 1;
  if (!ok(qdq_quantize_linear(NULL, &node, &xt, &st, NULL, y, info.bytes), "qdq_quantize_linear")) {
    free(y);
    return 1;
  }
  /* int4 codes are packed two per byte, low nibble first. */
  printf("QuantizeLinear-21 -> dtype %d, %zu bytes:", (int)info.dtype, info.bytes);
  for (size_t i = 0; i < 6; i++) {
    int nibble = (y[i / 2] >> (4 * (i % 2))) & 0xF;
    printf(" %d", nibble >= 8 ? nibble - 16 : nibble);
  }
  printf("\n");
  free(y);
  return 0;
}
