/*
 * test_capi.c: the C-side tests of qdq's C ABI (include/qdq.h), linked against
 * libqdq.a. Run by `cargo xtask capi-test`, which builds it with
 *
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -fsanitize=address,undefined ...
 *
 * Every expected value is exact: integer codes compare exactly, floats by their bits.
 * Prints "N passed, M failed" and exits non-zero on any failure. Checks that cannot run
 * on this CPU (a forced ISA it lacks) print "skipped" and are not counted.
 *
 * Two statuses cannot be produced by valid C usage: QDQ_ARITY (the C functions fix the
 * number of inputs and outputs) and QDQ_INTERNAL (a caught panic: a bug in qdq, or a
 * panicking task). What is tested instead is that a pool whose parallel_for skips tasks
 * still gives correct results: qdq runs the parts no task claimed on the calling thread.
 */
#define _POSIX_C_SOURCE 200809L

#include "qdq.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------- */
/* Assertions. */

static int g_passed, g_failed;

static void fail_line(const char *file, int line, const char *what) {
  g_failed++;
  fprintf(stderr, "%s:%d: FAILED: %s\n    qdq_last_error: \"%s\"\n", file, line, what,
          qdq_last_error());
}

static int check_at(int ok, const char *file, int line, const char *expr) {
  if (ok) {
    g_passed++;
  } else {
    fail_line(file, line, expr);
  }
  return ok;
}

static int check_status_at(int got, int want, const char *file, int line, const char *expr) {
  if (got == want) {
    g_passed++;
    return 1;
  }
  g_failed++;
  fprintf(stderr, "%s:%d: FAILED: %s\n    returned %s (%d), expected %s (%d)\n"
          "    qdq_last_error: \"%s\"\n",
          file, line, expr, qdq_status_name(got), got, qdq_status_name(want), want,
          qdq_last_error());
  return 0;
}

static int check_bytes_at(const void *got, const void *want, size_t n, const char *file,
                          int line, const char *expr) {
  const uint8_t *g = got, *w = want;
  for (size_t i = 0; i < n; i++) {
    if (g[i] != w[i]) {
      char what[256];
      snprintf(what, sizeof what, "%s: byte %zu is 0x%02x, expected 0x%02x", expr, i, g[i], w[i]);
      fail_line(file, line, what);
      return 0;
    }
  }
  g_passed++;
  return 1;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static int check_f32s_at(const float *got, const float *want, size_t n, const char *file,
                         int line, const char *expr) {
  for (size_t i = 0; i < n; i++) {
    if (f32_bits(got[i]) != f32_bits(want[i])) {
      char what[256];
      snprintf(what, sizeof what, "%s: element %zu is %.9g (0x%08x), expected %.9g (0x%08x)",
               expr, i, (double)got[i], f32_bits(got[i]), (double)want[i], f32_bits(want[i]));
      fail_line(file, line, what);
      return 0;
    }
  }
  g_passed++;
  return 1;
}

#define CHECK(cond) check_at(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_ST(call, want) check_status_at((int)(call), (int)(want), __FILE__, __LINE__, #call)
#define CHECK_OK(call) CHECK_ST(call, QDQ_OK)
#define CHECK_BYTES(got, want, n) check_bytes_at((got), (want), (n), __FILE__, __LINE__, #got)
#define CHECK_F32S(got, want, n) check_f32s_at((got), (want), (n), __FILE__, __LINE__, #got)
/* qdq_last_error() names the argument at fault. */
#define CHECK_ERR(substr) check_at(strstr(qdq_last_error(), (substr)) != NULL, __FILE__, __LINE__, \
                                   "qdq_last_error() mentions \"" substr "\"")

/* ---------------------------------------------------------------------------------- */
/* Builders. */

static qdq_params mkparams(int32_t scale_dtype, const void *scales, size_t n_scales,
                           int32_t zp_dtype, const void *zps, size_t n_zps) {
  qdq_params p;
  memset(&p, 0, sizeof p); /* per-tensor, saturating, precision of the scale */
  p.scale_dtype = scale_dtype;
  p.scales = scales;
  p.n_scales = n_scales;
  p.zero_point_dtype = zp_dtype;
  p.zero_points = zps;
  p.n_zero_points = n_zps;
  return p;
}

static qdq_tensor mktensor(int32_t dtype, size_t rank, const int64_t *shape, const void *data) {
  qdq_tensor t;
  t.dtype = dtype;
  t.rank = rank;
  t.shape = shape;
  t.data = data;
  return t;
}

static qdq_node mknode(const char *domain, int64_t opset, const qdq_attribute *attrs, size_t n) {
  qdq_node node;
  node.domain = domain;
  node.opset = opset;
  node.attributes = attrs;
  node.n_attributes = n;
  return node;
}

/* ---------------------------------------------------------------------------------- */
/* Version, ISA and size queries. */

static void test_queries(void) {
  static const char *const status_names[18] = {
      "QDQ_OK", "QDQ_UNSUPPORTED_OPSET", "QDQ_UNKNOWN_ATTRIBUTE", "QDQ_INVALID_ATTRIBUTE",
      "QDQ_INVALID_ARGUMENT", "QDQ_MISSING_ATTRIBUTE", "QDQ_UNSUPPORTED_TYPE",
      "QDQ_TYPE_MISMATCH", "QDQ_AXIS_OUT_OF_RANGE", "QDQ_SHAPE_MISMATCH", "QDQ_BUFFER_LENGTH",
      "QDQ_SHAPE_OVERFLOW", "QDQ_NON_ZERO_ZERO_POINT", "QDQ_ARITY", "QDQ_ISA_UNAVAILABLE",
      "QDQ_NULL_POINTER", "QDQ_BUFFER_TOO_SMALL", "QDQ_INTERNAL"};
  for (int s = 0; s < 18; s++) {
    CHECK(strcmp(qdq_status_name(s), status_names[s]) == 0);
  }
  CHECK(strcmp(qdq_status_name(99), "unknown") == 0);
  CHECK(strcmp(qdq_status_name(-1), "unknown") == 0);

  const char *v = qdq_version();
  CHECK(v != NULL && v[0] != '\0');
  CHECK(strcmp(v, "0.1.0") == 0);

  CHECK(qdq_isa_available(QDQ_ISA_AUTO) == 1);
  CHECK(qdq_isa_available(QDQ_ISA_SCALAR) == 1);
  CHECK(qdq_isa_available(99) == 0);
  int32_t isa = -1;
  CHECK_OK(qdq_isa_detect(&isa));
  CHECK(isa >= QDQ_ISA_SCALAR && isa <= QDQ_ISA_NEON && qdq_isa_available(isa) == 1);
  printf("detected ISA: %s\n", qdq_isa_name(isa));
  CHECK_ST(qdq_isa_detect(NULL), QDQ_NULL_POINTER);
  CHECK(strcmp(qdq_isa_name(QDQ_ISA_AUTO), "auto") == 0);
  CHECK(strcmp(qdq_isa_name(QDQ_ISA_SCALAR), "scalar") == 0);
  CHECK(strcmp(qdq_isa_name(QDQ_ISA_AVX2), "avx2") == 0);
  CHECK(strcmp(qdq_isa_name(QDQ_ISA_AVX512), "avx512") == 0);
  CHECK(strcmp(qdq_isa_name(QDQ_ISA_NEON), "neon") == 0);
  CHECK(strcmp(qdq_isa_name(99), "unknown") == 0);

  size_t b = 0;
  CHECK_OK(qdq_byte_size(QDQ_UINT8, 5, &b));
  CHECK(b == 5);
  CHECK_OK(qdq_byte_size(QDQ_FLOAT, 3, &b));
  CHECK(b == 12);
  CHECK_OK(qdq_byte_size(QDQ_INT4, 5, &b));
  CHECK(b == 3);
  CHECK_OK(qdq_byte_size(QDQ_INT2, 5, &b));
  CHECK(b == 2);
  CHECK_OK(qdq_byte_size(QDQ_FLOAT6E2M3, 4, &b));
  CHECK(b == 3);
  CHECK_OK(qdq_byte_size(QDQ_FLOAT4E2M1, 0, &b));
  CHECK(b == 0);
  CHECK_ST(qdq_byte_size(99, 1, &b), QDQ_UNSUPPORTED_TYPE);
  CHECK_ST(qdq_byte_size(0, 1, &b), QDQ_UNSUPPORTED_TYPE);
  CHECK_ST(qdq_byte_size(QDQ_FLOAT, SIZE_MAX, &b), QDQ_SHAPE_OVERFLOW);
  CHECK_ST(qdq_byte_size(QDQ_FLOAT, 1, NULL), QDQ_NULL_POINTER);
  CHECK_ERR("bytes");

  CHECK(qdq_mask_bytes(0) == 0 && qdq_mask_bytes(8) == 1 && qdq_mask_bytes(9) == 2);
}

/* ---------------------------------------------------------------------------------- */
/* Tensor level: ONNX nodes. */

static void test_tensor_quantize(void) {
  qdq_tensor_info info;
  /* QuantizeLinear-13, u8 per-tensor with a zero point. */
  {
    const int64_t shape[2] = {2, 3};
    const float x[6] = {0.0f, 1.0f, 2.5f, -1.0f, 300.0f, -300.0f};
    const float s = 0.5f;
    const uint8_t zp = 128, want[6] = {128, 130, 133, 126, 255, 0};
    qdq_tensor xt = mktensor(QDQ_FLOAT, 2, shape, x), st = mktensor(QDQ_FLOAT, 0, NULL, &s);
    qdq_tensor zt = mktensor(QDQ_UINT8, 0, NULL, &zp);
    qdq_node node = mknode("", 13, NULL, 0);
    CHECK_OK(qdq_quantize_linear_info(&node, &xt, &st, &zt, &info));
    CHECK(info.dtype == QDQ_UINT8 && info.rank == 2 && info.shape == shape && info.bytes == 6);
    uint8_t y[6] = {0};
    CHECK_OK(qdq_quantize_linear(NULL, &node, &xt, &st, &zt, y, sizeof y));
    CHECK_BYTES(y, want, 6);
    /* No zero point: u8 with zero point 0. */
    const uint8_t want0[6] = {0, 2, 5, 0, 255, 0};
    CHECK_OK(qdq_quantize_linear(NULL, &node, &xt, &st, NULL, y, sizeof y));
    CHECK_BYTES(y, want0, 6);
  }
  /* QuantizeLinear-21, int4 through output_dtype, blocks of 2 along axis 1. */
  {
    const int64_t shape[2] = {2, 4}, sshape[2] = {2, 2};
    const float x[8] = {1, 2, 3, 4, -1, -2, -3, -4};
    const float s[4] = {1.0f, 0.5f, 2.0f, 0.25f};
    /* codes {1, 2, 6, 7 (8 clamped), 0 (-0.5 ties to even), -1, -8, -8 (-16 clamped)},
       two per byte, low nibble first */
    const uint8_t want[4] = {0x21, 0x76, 0xF0, 0x88};
    const qdq_attribute attrs[3] = {{"output_dtype", QDQ_INT4}, {"block_size", 2}, {"axis", 1}};
    qdq_tensor xt = mktensor(QDQ_FLOAT, 2, shape, x), st = mktensor(QDQ_FLOAT, 2, sshape, s);
    qdq_node node = mknode("ai.onnx", 21, attrs, 3);
    CHECK_OK(qdq_quantize_linear_info(&node, &xt, &st, NULL, &info));
    CHECK(info.dtype == QDQ_INT4 && info.rank == 2 && info.shape == shape && info.bytes == 4);
    uint8_t y[4] = {0};
    CHECK_OK(qdq_quantize_linear(NULL, &node, &xt, &st, NULL, y, sizeof y));
    CHECK_BYTES(y, want, 4);
  }
  /* QuantizeLinear-13, int8 per-axis along axis 1 (the zero point gives the type). */
  {
    const int64_t shape[2] = {2, 3}, sshape[1] = {3};
    const float x[6] = {4, 4, 4, -8, 8, 100};
    const float s[3] = {1, 2, 4};
    const int8_t zp[3] = {0, 1, -1}, want[6] = {4, 3, 0, -8, 5, 24};
    const qdq_attribute attrs[1] = {{"axis", 1}};
    qdq_tensor xt = mktensor(QDQ_FLOAT, 2, shape, x), st = mktensor(QDQ_FLOAT, 1, sshape, s);
    qdq_tensor zt = mktensor(QDQ_INT8, 1, sshape, zp);
    qdq_node node = mknode(NULL, 13, attrs, 1);
    CHECK_OK(qdq_quantize_linear_info(&node, &xt, &st, &zt, &info));
    CHECK(info.dtype == QDQ_INT8 && info.bytes == 6);
    int8_t y[6] = {0};
    CHECK_OK(qdq_quantize_linear(NULL, &node, &xt, &st, &zt, y, sizeof y));
    CHECK_BYTES(y, want, 6);
  }
}

static void test_tensor_dequantize(void) {
  qdq_tensor_info info;
  /* DequantizeLinear-21, int8 per-tensor: (x - zp) * s. */
  {
    const int64_t shape[1] = {4};
    const int8_t x[4] = {-128, -1, 0, 127}, zp = -1;
    const float s = 0.5f, want[4] = {-63.5f, 0.0f, 0.5f, 64.0f};
    qdq_tensor xt = mktensor(QDQ_INT8, 1, shape, x), st = mktensor(QDQ_FLOAT, 0, NULL, &s);
    qdq_tensor zt = mktensor(QDQ_INT8, 0, NULL, &zp);
    qdq_node node = mknode("", 21, NULL, 0);
    CHECK_OK(qdq_dequantize_linear_info(&node, &xt, &st, &zt, &info));
    CHECK(info.dtype == QDQ_FLOAT && info.rank == 1 && info.shape == shape && info.bytes == 16);
    float y[4] = {0};
    CHECK_OK(qdq_dequantize_linear(NULL, &node, &xt, &st, &zt, y, sizeof y));
    CHECK_F32S(y, want, 4);
  }
  /* DequantizeLinear-21, int4 blocked (the codes of test_tensor_quantize). */
  {
    const int64_t shape[2] = {2, 4}, sshape[2] = {2, 2};
    const uint8_t x[4] = {0x21, 0x76, 0xF0, 0x88};
    const float s[4] = {1.0f, 0.5f, 2.0f, 0.25f};
    const float want[8] = {1, 2, 3, 3.5f, 0, -2, -2, -2};
    const qdq_attribute attrs[2] = {{"block_size", 2}, {"axis", -1}};
    qdq_tensor xt = mktensor(QDQ_INT4, 2, shape, x), st = mktensor(QDQ_FLOAT, 2, sshape, s);
    qdq_node node = mknode("", 21, attrs, 2);
    CHECK_OK(qdq_dequantize_linear_info(&node, &xt, &st, NULL, &info));
    CHECK(info.dtype == QDQ_FLOAT && info.bytes == 32);
    float y[8] = {0};
    CHECK_OK(qdq_dequantize_linear(NULL, &node, &xt, &st, NULL, y, sizeof y));
    CHECK_F32S(y, want, 8);
  }
  /* DequantizeLinear-19 with an f16 scale: the output is f16. */
  {
    const int64_t shape[1] = {2};
    const uint8_t x[2] = {0, 10}, zp = 4;
    const uint16_t s = 0x3800;                      /* 0.5 */
    const uint16_t want[2] = {0xC000, 0x4200};      /* -2.0, 3.0 */
    qdq_tensor xt = mktensor(QDQ_UINT8, 1, shape, x), st = mktensor(QDQ_FLOAT16, 0, NULL, &s);
    qdq_tensor zt = mktensor(QDQ_UINT8, 0, NULL, &zp);
    qdq_node node = mknode("", 19, NULL, 0);
    CHECK_OK(qdq_dequantize_linear_info(&node, &xt, &st, &zt, &info));
    CHECK(info.dtype == QDQ_FLOAT16 && info.bytes == 4);
    uint16_t y[2] = {0};
    CHECK_OK(qdq_dequantize_linear(NULL, &node, &xt, &st, &zt, y, sizeof y));
    CHECK_BYTES(y, want, sizeof want);
  }
}

static void test_tensor_dynamic(void) {
  const int64_t shape[1] = {2};
  qdq_node node = mknode("", 11, NULL, 0);
  /* scale = (max(x, 0) - min(x, 0)) / 255 in f32: 0.01 here. */
  volatile float range = 2.55f;
  const float want_scale = (range - 0.0f) / 255.0f;
  CHECK(want_scale > 0.0099999f && want_scale < 0.0100001f);

  const float x[2] = {0.0f, 2.55f};
  qdq_tensor xt = mktensor(QDQ_FLOAT, 1, shape, x);
  qdq_tensor_info out[3];
  CHECK_OK(qdq_dynamic_quantize_linear_info(&node, &xt, out));
  CHECK(out[0].dtype == QDQ_UINT8 && out[0].rank == 1 && out[0].shape == shape && out[0].bytes == 2);
  CHECK(out[1].dtype == QDQ_FLOAT && out[1].rank == 0 && out[1].shape == NULL && out[1].bytes == 4);
  CHECK(out[2].dtype == QDQ_UINT8 && out[2].rank == 0 && out[2].shape == NULL && out[2].bytes == 1);
  uint8_t y[2] = {0}, zp = 99;
  float scale = 0.0f;
  const uint8_t want_y[2] = {0, 255};
  CHECK_OK(qdq_dynamic_quantize_linear(NULL, &node, &xt, y, sizeof y, &scale, &zp));
  CHECK_BYTES(y, want_y, 2);
  CHECK_F32S(&scale, &want_scale, 1);
  CHECK(zp == 0);

  /* Negative values only: the zero point is 255. */
  const float xn[2] = {0.0f, -2.55f};
  const uint8_t want_yn[2] = {255, 0};
  qdq_tensor xnt = mktensor(QDQ_FLOAT, 1, shape, xn);
  CHECK_OK(qdq_dynamic_quantize_linear(NULL, &node, &xnt, y, sizeof y, &scale, &zp));
  CHECK_BYTES(y, want_yn, 2);
  CHECK_F32S(&scale, &want_scale, 1);
  CHECK(zp == 255);

  /* Only f32, only ai.onnx opset >= 11, no attributes. */
  const uint16_t xh[2] = {0x3C00, 0x4000};
  qdq_tensor xht = mktensor(QDQ_FLOAT16, 1, shape, xh);
  CHECK_ST(qdq_dynamic_quantize_linear(NULL, &node, &xht, y, sizeof y, &scale, &zp),
           QDQ_UNSUPPORTED_TYPE);
  qdq_node old = mknode("", 10, NULL, 0), ms = mknode("com.microsoft", 1, NULL, 0);
  CHECK_ST(qdq_dynamic_quantize_linear_info(&old, &xt, out), QDQ_UNSUPPORTED_OPSET);
  CHECK_ST(qdq_dynamic_quantize_linear_info(&ms, &xt, out), QDQ_UNSUPPORTED_OPSET);
  const qdq_attribute axis[1] = {{"axis", 0}};
  qdq_node with_attr = mknode("", 11, axis, 1);
  CHECK_ST(qdq_dynamic_quantize_linear(NULL, &with_attr, &xt, y, sizeof y, &scale, &zp),
           QDQ_UNKNOWN_ATTRIBUTE);
  CHECK_ST(qdq_dynamic_quantize_linear(NULL, &node, &xt, y, 1, &scale, &zp), QDQ_BUFFER_TOO_SMALL);
  CHECK_ST(qdq_dynamic_quantize_linear(NULL, &node, &xt, y, sizeof y, NULL, &zp), QDQ_NULL_POINTER);
  CHECK_ERR("y_scale");
}

static void test_tensor_microsoft(void) {
  /* com.microsoft QuantizeLinear-1 into u16, and DequantizeLinear-1 back. */
  const int64_t shape[1] = {3};
  const float x[3] = {1.0f, 2.0f, 3.0f}, s = 0.5f;
  const uint16_t zp = 1000, want[3] = {1002, 1004, 1006};
  qdq_tensor xt = mktensor(QDQ_FLOAT, 1, shape, x), st = mktensor(QDQ_FLOAT, 0, NULL, &s);
  qdq_tensor zt = mktensor(QDQ_UINT16, 0, NULL, &zp);
  qdq_node node = mknode("com.microsoft", 1, NULL, 0);
  qdq_tensor_info info;
  CHECK_OK(qdq_quantize_linear_info(&node, &xt, &st, &zt, &info));
  CHECK(info.dtype == QDQ_UINT16 && info.bytes == 6);
  uint16_t y[3] = {0};
  CHECK_OK(qdq_quantize_linear(NULL, &node, &xt, &st, &zt, y, sizeof y));
  CHECK_BYTES(y, want, sizeof want);
  qdq_tensor yt = mktensor(QDQ_UINT16, 1, shape, y);
  float back[3] = {0};
  CHECK_OK(qdq_dequantize_linear(NULL, &node, &yt, &st, &zt, back, sizeof back));
  CHECK_F32S(back, x, 3);
  /* Its QuantizeLinear has no block_size. */
  const qdq_attribute blk[1] = {{"block_size", 2}};
  qdq_node with_blk = mknode("com.microsoft", 1, blk, 1);
  CHECK_ST(qdq_quantize_linear_info(&with_blk, &xt, &st, &zt, &info), QDQ_UNKNOWN_ATTRIBUTE);
}

/* ---------------------------------------------------------------------------------- */
/* Slice level. */

static void test_layouts(void) {
  const int64_t shape[3] = {2, 3, 4};
  qdq_layout l;
  CHECK_OK(qdq_layout_per_axis(shape, 3, 1, &l));
  CHECK(l.kind == QDQ_LAYOUT_PER_AXIS && l.outer == 2 && l.axis_len == 3 && l.inner == 4);
  CHECK_OK(qdq_layout_per_axis(shape, 3, -1, &l));
  CHECK(l.kind == QDQ_LAYOUT_PER_AXIS && l.outer == 6 && l.axis_len == 4 && l.inner == 1);
  CHECK_OK(qdq_layout_blocked(shape, 3, 2, 3, &l));
  CHECK(l.kind == QDQ_LAYOUT_BLOCKED && l.outer == 6 && l.axis_len == 4 && l.inner == 1 &&
        l.block == 3);
  CHECK_ST(qdq_layout_per_axis(shape, 3, 3, &l), QDQ_AXIS_OUT_OF_RANGE);
  CHECK_ST(qdq_layout_per_axis(shape, 3, -4, &l), QDQ_AXIS_OUT_OF_RANGE);
  CHECK_ST(qdq_layout_blocked(shape, 3, 0, 0, &l), QDQ_INVALID_ARGUMENT);
  CHECK_ST(qdq_layout_blocked(shape, 3, 0, -2, &l), QDQ_INVALID_ARGUMENT);
  const int64_t negative[2] = {2, -3};
  CHECK_ST(qdq_layout_per_axis(negative, 2, 0, &l), QDQ_SHAPE_OVERFLOW);
  CHECK_ST(qdq_layout_per_axis(shape, 3, 0, NULL), QDQ_NULL_POINTER);
  CHECK_ST(qdq_layout_per_axis(NULL, 2, 0, &l), QDQ_NULL_POINTER);
}

static void test_slice_quantize(void) {
  /* f32 -> int8 per-tensor with a zero point. */
  {
    const float x[5] = {0.0f, 1.25f, -1.25f, 100.0f, -100.0f}, s = 0.5f;
    const int8_t zp = 3, want[5] = {3, 5, 1, 127, -128}; /* 2.5 -> 2, -2.5 -> -2: ties to even */
    qdq_params p = mkparams(QDQ_FLOAT, &s, 1, QDQ_INT8, &zp, 1);
    int8_t y[5] = {0};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 5, &p, QDQ_INT8, y, sizeof y));
    CHECK_BYTES(y, want, 5);
  }
  /* f32 -> u8 per-axis (the layout from a shape). */
  {
    const int64_t shape[2] = {2, 3};
    const float x[6] = {1, 1, 1, 10, 10, 10}, s[3] = {1.0f, 0.5f, 0.25f};
    const uint8_t zp[3] = {0, 10, 20}, want[6] = {1, 12, 24, 10, 30, 60};
    qdq_params p = mkparams(QDQ_FLOAT, s, 3, QDQ_UINT8, zp, 3);
    CHECK_OK(qdq_layout_per_axis(shape, 2, 1, &p.layout));
    uint8_t y[6] = {0};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 6, &p, QDQ_UINT8, y, sizeof y));
    CHECK_BYTES(y, want, 6);
  }
  /* f32 -> int4 per-tensor: packed two per byte, low nibble first, the last byte padded. */
  {
    const float x[5] = {1, -1, 7, -8, 9}, s = 1.0f;
    const uint8_t want[3] = {0xF1, 0x87, 0x07}; /* codes 1, -1, 7, -8, 7 (9 clamped) */
    qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
    size_t need = 0;
    CHECK_OK(qdq_byte_size(QDQ_INT4, 5, &need));
    CHECK(need == 3);
    uint8_t y[3] = {0xAA, 0xAA, 0xAA};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 5, &p, QDQ_INT4, y, sizeof y));
    CHECK_BYTES(y, want, 3);
  }
  /* f32 -> int4 blocked: the bytes of the QuantizeLinear-21 node test. */
  {
    const int64_t shape[2] = {2, 4};
    const float x[8] = {1, 2, 3, 4, -1, -2, -3, -4}, s[4] = {1.0f, 0.5f, 2.0f, 0.25f};
    const uint8_t want[4] = {0x21, 0x76, 0xF0, 0x88};
    qdq_params p = mkparams(QDQ_FLOAT, s, 4, 0, NULL, 0);
    CHECK_OK(qdq_layout_blocked(shape, 2, 1, 2, &p.layout));
    uint8_t y[4] = {0};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 8, &p, QDQ_INT4, y, sizeof y));
    CHECK_BYTES(y, want, 4);
  }
  /* f32 -> float8 e4m3fn, saturating and not. */
  {
    const float x[6] = {1.0f, -2.0f, 0.5f, 448.0f, 1000.0f, -1000.0f}, s = 1.0f;
    const uint8_t want_sat[6] = {0x38, 0xC0, 0x30, 0x7E, 0x7E, 0xFE};
    const uint8_t want_nosat[6] = {0x38, 0xC0, 0x30, 0x7E, 0x7F, 0xFF}; /* NaN: no infinity */
    qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
    uint8_t y[6] = {0};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 6, &p, QDQ_FLOAT8E4M3FN, y, sizeof y));
    CHECK_BYTES(y, want_sat, 6);
    p.no_saturate = 1;
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 6, &p, QDQ_FLOAT8E4M3FN, y, sizeof y));
    CHECK_BYTES(y, want_nosat, 6);
  }
  /* f16 x and scale -> int8 (the division in f16). */
  {
    const uint16_t x[3] = {0x3C00, 0x4100, 0xC200}; /* 1.0, 2.5, -3.0 */
    const uint16_t s = 0x3800;                      /* 0.5 */
    const int8_t want[3] = {2, 5, -6};
    qdq_params p = mkparams(QDQ_FLOAT16, &s, 1, 0, NULL, 0);
    int8_t y[3] = {0};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT16, x, 3, &p, QDQ_INT8, y, sizeof y));
    CHECK_BYTES(y, want, 3);
  }
  /* A larger buffer is fine: the bytes after the output are left alone. */
  {
    const float x[2] = {1, 2}, s = 1.0f;
    const uint8_t want[4] = {1, 2, 0xEE, 0xEE};
    qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
    uint8_t y[4] = {0xEE, 0xEE, 0xEE, 0xEE};
    CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 2, &p, QDQ_UINT8, y, sizeof y));
    CHECK_BYTES(y, want, 4);
  }
}

static void test_slice_dequantize(void) {
  /* int8 per-tensor -> f32. */
  {
    const int8_t x[3] = {-128, 0, 127}, zp = -128;
    const float s = 0.25f, want[3] = {0.0f, 32.0f, 63.75f};
    qdq_params p = mkparams(QDQ_FLOAT, &s, 1, QDQ_INT8, &zp, 1);
    float y[3] = {0};
    CHECK_OK(qdq_dequantize(NULL, QDQ_INT8, x, 3, &p, QDQ_FLOAT, y, sizeof y));
    CHECK_F32S(y, want, 3);
  }
  /* int4 per-axis (axis 0 of [2, 3]) -> f32. */
  {
    const int64_t shape[2] = {2, 3};
    const uint8_t x[3] = {0xF1, 0x87, 0x07}; /* 1, -1, 7, -8, 7, 0 */
    const float s[2] = {2.0f, 0.5f}, want[6] = {2, -2, 14, -4, 3.5f, 0};
    qdq_params p = mkparams(QDQ_FLOAT, s, 2, 0, NULL, 0);
    CHECK_OK(qdq_layout_per_axis(shape, 2, 0, &p.layout));
    float y[6] = {0};
    CHECK_OK(qdq_dequantize(NULL, QDQ_INT4, x, 6, &p, QDQ_FLOAT, y, sizeof y));
    CHECK_F32S(y, want, 6);
  }
  /* u8 blocked (blocks of 2 along a [5] tensor, the last one short) -> f32. */
  {
    const int64_t shape[1] = {5};
    const uint8_t x[5] = {10, 20, 30, 40, 50}, zp[3] = {10, 0, 50};
    const float s[3] = {1.0f, 0.5f, 2.0f}, want[5] = {0, 10, 15, 20, 0};
    qdq_params p = mkparams(QDQ_FLOAT, s, 3, QDQ_UINT8, zp, 3);
    CHECK_OK(qdq_layout_blocked(shape, 1, 0, 2, &p.layout));
    float y[5] = {0};
    CHECK_OK(qdq_dequantize(NULL, QDQ_UINT8, x, 5, &p, QDQ_FLOAT, y, sizeof y));
    CHECK_F32S(y, want, 5);
  }
  /* float8 e4m3fn -> f16. */
  {
    const uint8_t x[2] = {0x38, 0xC0}; /* 1.0, -2.0 */
    const float s = 2.0f;
    const uint16_t want[2] = {0x4000, 0xC400}; /* 2.0, -4.0 */
    qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
    uint16_t y[2] = {0};
    CHECK_OK(qdq_dequantize(NULL, QDQ_FLOAT8E4M3FN, x, 2, &p, QDQ_FLOAT16, y, sizeof y));
    CHECK_BYTES(y, want, sizeof want);
  }
}

static void test_slice_ranges(void) {
  /* Shards of a call match the whole call. */
  enum { N = 12 };
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i * 3 - 17) * 0.75f;
  const float s = 0.5f;
  const uint8_t zp = 7;
  qdq_params pu8 = mkparams(QDQ_FLOAT, &s, 1, QDQ_UINT8, &zp, 1);
  qdq_params pi4 = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
  const size_t cuts[4] = {0, 4, 10, N};

  uint8_t whole[N], parts[N];
  CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, N, &pu8, QDQ_UINT8, whole, sizeof whole));
  memset(parts, 0, sizeof parts);
  for (int k = 0; k < 3; k++) {
    CHECK_OK(qdq_quantize_range(NULL, QDQ_FLOAT, x, N, &pu8, cuts[k], cuts[k + 1], QDQ_UINT8,
                                parts + cuts[k], cuts[k + 1] - cuts[k]));
  }
  CHECK_BYTES(parts, whole, N);

  /* int4: shards start on byte boundaries (even elements). */
  uint8_t whole4[N / 2], parts4[N / 2];
  CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, N, &pi4, QDQ_INT4, whole4, sizeof whole4));
  memset(parts4, 0, sizeof parts4);
  for (int k = 0; k < 3; k++) {
    CHECK_OK(qdq_quantize_range(NULL, QDQ_FLOAT, x, N, &pi4, cuts[k], cuts[k + 1], QDQ_INT4,
                                parts4 + cuts[k] / 2, (cuts[k + 1] - cuts[k]) / 2));
  }
  CHECK_BYTES(parts4, whole4, N / 2);
  /* An odd start splits a byte: refused. */
  CHECK_ST(qdq_quantize_range(NULL, QDQ_FLOAT, x, N, &pi4, 1, 4, QDQ_INT4, parts4, sizeof parts4),
           QDQ_INVALID_ARGUMENT);
  CHECK_ST(qdq_quantize_range(NULL, QDQ_FLOAT, x, N, &pu8, 5, 13, QDQ_UINT8, parts, sizeof parts),
           QDQ_INVALID_ARGUMENT);
  CHECK_ST(qdq_quantize_range(NULL, QDQ_FLOAT, x, N, &pu8, 6, 5, QDQ_UINT8, parts, sizeof parts),
           QDQ_INVALID_ARGUMENT);

  /* Dequantize shards (any begin, also for int4 codes). */
  float dwhole[N], dparts[N];
  CHECK_OK(qdq_dequantize(NULL, QDQ_INT4, whole4, N, &pi4, QDQ_FLOAT, dwhole, sizeof dwhole));
  const size_t dcuts[4] = {0, 3, 7, N};
  memset(dparts, 0, sizeof dparts);
  for (int k = 0; k < 3; k++) {
    CHECK_OK(qdq_dequantize_range(NULL, QDQ_INT4, whole4, N, &pi4, dcuts[k], dcuts[k + 1],
                                  QDQ_FLOAT, dparts + dcuts[k],
                                  (dcuts[k + 1] - dcuts[k]) * sizeof(float)));
  }
  CHECK_F32S(dparts, dwhole, N);
  CHECK_ST(qdq_dequantize_range(NULL, QDQ_INT4, whole4, N, &pi4, 3, 7, QDQ_FLOAT, dparts, 15),
           QDQ_BUFFER_TOO_SMALL);
}

static void test_slice_dynamic(void) {
  /* The worked example of DynamicQuantizeLinear: scale 5/255, zero point 153. */
  const float x[6] = {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f};
  const uint8_t want[6] = {153, 255, 0, 26, 221, 179};
  volatile float five = 5.0f;
  const float want_scale = five / 255.0f;
  uint8_t y[6] = {0}, zp = 0;
  float scale = 0.0f;
  CHECK_OK(qdq_dynamic_quantize(NULL, x, 6, y, sizeof y, &scale, &zp));
  CHECK_BYTES(y, want, 6);
  CHECK_F32S(&scale, &want_scale, 1);
  CHECK(zp == 153);
  /* Empty input: scale 0, zero point 0. */
  const float zero = 0.0f;
  scale = 1.0f;
  zp = 1;
  CHECK_OK(qdq_dynamic_quantize(NULL, NULL, 0, NULL, 0, &scale, &zp));
  CHECK_F32S(&scale, &zero, 1);
  CHECK(zp == 0);
  CHECK_ST(qdq_dynamic_quantize(NULL, x, 6, y, 5, &scale, &zp), QDQ_BUFFER_TOO_SMALL);
  CHECK_ST(qdq_dynamic_quantize(NULL, x, 6, y, 6, &scale, NULL), QDQ_NULL_POINTER);
  CHECK_ERR("zero_point");
}

/* ---------------------------------------------------------------------------------- */
/* Training. */

static void test_train(void) {
  const float one = 1.0f;
  const int8_t zp0 = 0;
  qdq_params p = mkparams(QDQ_FLOAT, &one, 1, QDQ_INT8, &zp0, 1);

  /* Forward with the mask: clamped elements (1, 2, 8) have bit 0. */
  {
    const float x[9] = {0.25f, 200, -200, 1.75f, 3, -3, 127, -128, 128};
    const int8_t want[9] = {0, 127, -128, 2, 3, -3, 127, -128, 127};
    const uint8_t want_mask[2] = {0xF9, 0x00};
    int8_t y[9] = {0};
    uint8_t mask[2] = {0xAA, 0xAA};
    CHECK_OK(qdq_quantize_train(NULL, QDQ_FLOAT, x, 9, &p, QDQ_INT8, y, sizeof y, mask, sizeof mask));
    CHECK_BYTES(y, want, 9);
    CHECK_BYTES(mask, want_mask, 2);
    CHECK_ST(qdq_quantize_train(NULL, QDQ_FLOAT, x, 9, &p, QDQ_INT8, y, sizeof y, mask, 1),
             QDQ_BUFFER_TOO_SMALL);
  }
  /* Fake quantization: DequantizeLinear(QuantizeLinear(x)) through u8, zero point 10. */
  {
    const float x[3] = {0.3f, 1.0f, 300.0f}, s = 0.5f, want[3] = {0.5f, 1.0f, 122.5f};
    const uint8_t zp = 10, want_mask = 0x03;
    qdq_params pu = mkparams(QDQ_FLOAT, &s, 1, QDQ_UINT8, &zp, 1);
    float y[3] = {0};
    uint8_t mask = 0;
    CHECK_OK(qdq_fake_quantize(NULL, QDQ_FLOAT, x, 3, &pu, QDQ_UINT8, QDQ_FLOAT, y, sizeof y,
                               &mask, 1));
    CHECK_F32S(y, want, 3);
    CHECK(mask == want_mask);
    CHECK_OK(qdq_fake_quantize(NULL, QDQ_FLOAT, x, 3, &pu, QDQ_UINT8, QDQ_FLOAT, y, sizeof y,
                               NULL, 0));
    CHECK_F32S(y, want, 3);
  }
  /* Straight-through backward: dx = mask ? (lda * dy) / s : +0. */
  {
    const float dy[4] = {1, 2, -3, 4}, s = 0.5f, want[4] = {3, 0, -9, 0};
    const uint8_t mask = 0x05; /* elements 0 and 2 */
    qdq_params ph = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
    float dx[4] = {-1, -1, -1, -1};
    CHECK_OK(qdq_quantize_backward(NULL, QDQ_FLOAT, dy, 4, &mask, 1, &ph, QDQ_INT8, 1.5f,
                                   QDQ_FLOAT, dx, sizeof dx));
    CHECK_F32S(dx, want, 4);
    /* The mask alone: dx = mask ? lda * dy : +0. */
    const float want_m[4] = {1.5f, 0, -4.5f, 0};
    CHECK_OK(qdq_mask_backward(NULL, QDQ_FLOAT, dy, 4, &mask, 1, 1.5f, QDQ_FLOAT, dx, sizeof dx));
    CHECK_F32S(dx, want_m, 4);
    /* An input mask has exactly ceil(n / 8) bytes. */
    CHECK_ST(qdq_mask_backward(NULL, QDQ_FLOAT, dy, 4, NULL, 0, 1.5f, QDQ_FLOAT, dx, sizeof dx),
             QDQ_BUFFER_LENGTH);
  }
  /* DequantizeLinear's backward: dx = lda * dy * s, per-axis scales along axis 0 of [2, 2]. */
  {
    const int64_t shape[2] = {2, 2};
    const float dy[4] = {1, 2, 3, 4}, s[2] = {0.5f, 2.0f}, want[4] = {1, 2, 12, 16};
    qdq_params pa = mkparams(QDQ_FLOAT, s, 2, 0, NULL, 0);
    CHECK_OK(qdq_layout_per_axis(shape, 2, 0, &pa.layout));
    float dx[4] = {0};
    CHECK_OK(qdq_dequantize_backward(NULL, QDQ_FLOAT, dy, 4, &pa, 2.0f, QDQ_FLOAT, dx, sizeof dx));
    CHECK_F32S(dx, want, 4);
    /* Its scale gradient: ds[k] = sum(dy * (x - zp)) over the elements of scale k. */
    const uint8_t x[4] = {10, 20, 30, 40}, zp[2] = {10, 0};
    const float dy2[4] = {1, 2, 3, 0.5f}, want_ds[2] = {20, 110};
    qdq_params pz = mkparams(QDQ_FLOAT, s, 2, QDQ_UINT8, zp, 2);
    pz.layout = pa.layout;
    float ds[2] = {0};
    CHECK_OK(qdq_dequantize_scale_grad(NULL, QDQ_FLOAT, dy2, QDQ_UINT8, x, 4, &pz, ds, 2));
    CHECK_F32S(ds, want_ds, 2);
    /* ds and dzp are a capacity in floats: fewer than one per scale is too small. */
    CHECK_ST(qdq_dequantize_scale_grad(NULL, QDQ_FLOAT, dy2, QDQ_UINT8, x, 4, &pz, ds, 1),
             QDQ_BUFFER_TOO_SMALL);
  }
  /* Fake quantization's backward (LSQ), int8, scale 1, zero point 0, lda 0.5, g 2:
   *   x 0.25 representable:  t = 2 * (0 - 0.25)   = -0.5,  u = -0
   *   x  200 clamped high:   t = 1 * (127 - 0)    =  127,  u = 1
   *   x -200 clamped low:    t = 1 * (-128 - 0)   = -128,  u = 1
   *   x 1.75 representable:  t = 4 * (2 - 1.75)   =  1,    u = -0
   * dx = mask ? lda * dy : +0 = {1, 0, 0, 2}; ds = g * sum t = -1; dzp = g * -(s * sum u) = -4. */
  {
    const float x[4] = {0.25f, 200, -200, 1.75f}, dy[4] = {2, 1, 1, 4};
    const float want_dx[4] = {1, 0, 0, 2}, want_ds = -1.0f, want_dzp = -4.0f;
    float dx[4] = {-1, -1, -1, -1}, ds = 0, dzp = 0;
    CHECK_OK(qdq_fake_quantize_backward(NULL, QDQ_FLOAT, dy, QDQ_FLOAT, x, 4, &p, QDQ_INT8, 0.5f,
                                        2.0f, QDQ_FLOAT, dx, sizeof dx, &ds, 1, &dzp, 1));
    CHECK_F32S(dx, want_dx, 4);
    CHECK_F32S(&ds, &want_ds, 1);
    CHECK_F32S(&dzp, &want_dzp, 1);
    /* Each output is optional. */
    ds = 0;
    CHECK_OK(qdq_fake_quantize_backward(NULL, QDQ_FLOAT, dy, QDQ_FLOAT, x, 4, &p, QDQ_INT8, 0.5f,
                                        2.0f, QDQ_FLOAT, NULL, 0, &ds, 1, NULL, 0));
    CHECK_F32S(&ds, &want_ds, 1);
    /* More room than one float per scale is fine: the floats after the gradients are
     * left alone. */
    float ds2[2] = {0, 99};
    const float want_ds2[2] = {-1.0f, 99};
    CHECK_OK(qdq_fake_quantize_backward(NULL, QDQ_FLOAT, dy, QDQ_FLOAT, x, 4, &p, QDQ_INT8, 0.5f,
                                        2.0f, QDQ_FLOAT, dx, sizeof dx, ds2, 2, NULL, 0));
    CHECK_F32S(ds2, want_ds2, 2);
    CHECK_ST(qdq_fake_quantize_backward(NULL, QDQ_FLOAT, dy, QDQ_FLOAT, x, 4, &p, QDQ_INT8, 0.5f,
                                        2.0f, QDQ_FLOAT, dx, sizeof dx, ds2, 0, NULL, 0),
             QDQ_BUFFER_TOO_SMALL);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Every status C input can produce. */

/* Buffers that share memory: an output overlapping any other argument is refused before
 * anything is read or written (in-place calls included); inputs may share freely. */
static void test_scaled(void) {
  /* Per-row, symmetric i8, a row stride of 4. */
  const float xr[8] = {1.0f, -2.0f, 0.5f, 9.0f, 4.0f, 2.0f, -1.0f, 9.0f};
  int8_t yr[6];
  float sr[2];
  const int8_t want_yr[6] = {64, -127, 32, 127, 64, -32};
  const float want_sr[2] = {2.0f / 127.0f, 4.0f / 127.0f};
  CHECK_OK(qdq_quantize_rows(NULL, QDQ_FLOAT, xr, 2, 3, 4, QDQ_INT8, yr, sizeof yr, sr, 2, NULL, 0));
  CHECK_BYTES(yr, want_yr, 6);
  CHECK_F32S(sr, want_sr, 2);
  /* Per-row u8: DynamicQuantizeLinear of each row, with zero points. */
  const float xu[6] = {1.0f, -2.0f, 0.5f, 4.0f, 2.0f, -1.0f};
  uint8_t yu[6], zu[2];
  float su[2];
  const uint8_t want_yu[6] = {255, 0, 212, 255, 153, 0}, want_zu[2] = {170, 51};
  CHECK_OK(qdq_quantize_rows(NULL, QDQ_FLOAT, xu, 2, 3, 3, QDQ_UINT8, yu, 6, su, 2, zu, 2));
  CHECK_BYTES(yu, want_yu, 6);
  CHECK_BYTES(zu, want_zu, 2);
  CHECK_ST(qdq_quantize_rows(NULL, QDQ_FLOAT, xu, 2, 3, 3, QDQ_UINT8, yu, 6, su, 2, NULL, 0),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("zero_points");
  CHECK_ST(qdq_quantize_rows(NULL, QDQ_FLOAT, xu, 2, 3, 3, QDQ_INT8, yu, 6, su, 2, zu, 2),
           QDQ_INVALID_ARGUMENT);
  CHECK_ST(qdq_quantize_rows(NULL, QDQ_FLOAT, xu, 2, 3, 3, QDQ_INT8, yu, 6, su, 1, NULL, 0),
           QDQ_BUFFER_TOO_SMALL);
  CHECK_ERR("scales");

  /* Blockwise int4, symmetric: a [2, 4] weight, blocks of 2 along axis 1. */
  const int64_t shape[2] = {2, 4};
  qdq_layout l;
  CHECK_OK(qdq_layout_blocked(shape, 2, 1, 2, &l));
  const float w[8] = {1.0f, -7.0f, 3.5f, 7.0f, 0.0f, 0.0f, -14.0f, 7.0f};
  uint8_t q[4];
  float s[4];
  const uint8_t want_q[4] = {0x91, 0x74, 0x00, 0x49};
  const float want_s[4] = {1.0f, 1.0f, 1.0f, 2.0f};
  CHECK_OK(qdq_quantize_blockwise(NULL, QDQ_FLOAT, w, 8, &l, QDQ_BLOCK_SYMMETRIC, QDQ_INT4, q, 4,
                                  QDQ_FLOAT, s, sizeof s, NULL, 0));
  CHECK_BYTES(q, want_q, 4);
  CHECK_F32S(s, want_s, 4);
  CHECK_ST(qdq_quantize_blockwise(NULL, QDQ_FLOAT, w, 8, &l, 7, QDQ_INT4, q, 4, QDQ_FLOAT, s,
                                  sizeof s, NULL, 0),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("mode");
  CHECK_ST(qdq_quantize_blockwise(NULL, QDQ_FLOAT, w, 8, &l, QDQ_BLOCK_ASYMMETRIC, QDQ_INT4, q, 4,
                                  QDQ_FLOAT, s, sizeof s, NULL, 0),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("zero_points");
  qdq_layout per_tensor;
  memset(&per_tensor, 0, sizeof per_tensor);
  CHECK_ST(qdq_quantize_blockwise(NULL, QDQ_FLOAT, w, 8, &per_tensor, QDQ_BLOCK_SYMMETRIC, QDQ_INT4,
                                  q, 4, QDQ_FLOAT, s, sizeof s, NULL, 0),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("blocked layout");
  /* onnxruntime's rule: the largest magnitude maps to -8, x times 1 / s. */
  const int64_t shape4[1] = {4};
  CHECK_OK(qdq_layout_blocked(shape4, 1, 0, 4, &l));
  const float wo[4] = {-4.0f, 1.0f, 2.0f, 3.0f};
  uint8_t qo[2];
  float so[1];
  const uint8_t want_qo[2] = {0x28, 0x64};
  CHECK_OK(qdq_quantize_blockwise(NULL, QDQ_FLOAT, wo, 4, &l, QDQ_BLOCK_ONNXRUNTIME, QDQ_INT4, qo, 2,
                                  QDQ_FLOAT, so, sizeof so, NULL, 0));
  CHECK_BYTES(qo, want_qo, 2);
  CHECK(so[0] == 0.5f);

  /* MXFP4, one block of 32: scale 2^2, -16 / 4 and -15 / 4 both give -4. */
  float xm[32];
  for (int i = 0; i < 32; i++) xm[i] = (float)(i - 16);
  const int64_t shape32[1] = {32};
  CHECK_OK(qdq_layout_blocked(shape32, 1, 0, 32, &l));
  uint8_t ym[16], sm[1];
  CHECK_OK(qdq_quantize_mx(NULL, QDQ_FLOAT, xm, 32, &l, QDQ_SCALE_FLOOR, QDQ_FLOAT4E2M1, ym, 16, sm, 1));
  CHECK(sm[0] == 129 && ym[0] == 0xee);
  CHECK_ST(qdq_quantize_mx(NULL, QDQ_FLOAT, xm, 32, &l, 9, QDQ_FLOAT4E2M1, ym, 16, sm, 1),
           QDQ_INVALID_ARGUMENT);
  CHECK_ST(qdq_quantize_mx(NULL, QDQ_FLOAT, xm, 32, &l, QDQ_SCALE_CEIL, QDQ_UINT8, ym, 32, sm, 1),
           QDQ_UNSUPPORTED_TYPE);

  /* NVFP4: the global scale, then e4m3 block scales (448 here) and e2m1 codes. */
  const float xn[4] = {3.0f, -1.0f, 0.25f, 12.0f};
  float g = 0.0f;
  CHECK_OK(qdq_nvfp4_global_scale(NULL, QDQ_FLOAT, xn, 4, &g));
  CHECK(g == 12.0f / 2688.0f);
  const int64_t shape_n[1] = {4};
  CHECK_OK(qdq_layout_blocked(shape_n, 1, 0, 16, &l));
  uint8_t yn[2], sn[1];
  const uint8_t want_yn[2] = {0x93, 0x70};
  CHECK_OK(qdq_quantize_nvfp4(NULL, QDQ_FLOAT, xn, 4, &l, g, yn, 2, sn, 1));
  CHECK(sn[0] == 0x7e);
  CHECK_BYTES(yn, want_yn, 2);
  CHECK_ST(qdq_quantize_nvfp4(NULL, QDQ_FLOAT, xn, 4, &l, -1.0f, yn, 2, sn, 1), QDQ_INVALID_ARGUMENT);
  CHECK_ERR("global_scale");
  CHECK_ST(qdq_quantize_nvfp4(NULL, QDQ_FLOAT, xn, 4, &l, g, yn, 1, sn, 1), QDQ_BUFFER_TOO_SMALL);
}

static void test_overlap(void) {
  float buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const float s = 1.0f;
  qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
  /* y (4 bytes of int8) inside x. */
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, buf, 8, &p, QDQ_INT8, (uint8_t *)buf + 4, 8),
           QDQ_INVALID_ARGUMENT);
  CHECK(strstr(qdq_last_error(), "overlaps") != NULL);
  /* In-place fake quantization (y == x). */
  CHECK_ST(qdq_fake_quantize(NULL, QDQ_FLOAT, buf, 8, &p, QDQ_INT8, QDQ_FLOAT, buf, sizeof buf,
                             NULL, 0),
           QDQ_INVALID_ARGUMENT);
  /* Two outputs on one byte. */
  uint8_t y[8];
  float scale = 0.0f;
  CHECK_ST(qdq_dynamic_quantize(NULL, buf, 8, y, 8, &scale, &y[3]), QDQ_INVALID_ARGUMENT);
  /* The output overlapping the params struct. */
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, buf, 1, &p, QDQ_INT8, &p, 1), QDQ_INVALID_ARGUMENT);
  /* Nothing was written by the refused calls. */
  const float want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK_F32S(buf, want, 8);
  /* dy and x may be one buffer (both inputs). */
  float dx[8];
  CHECK_OK(qdq_fake_quantize_backward(NULL, QDQ_FLOAT, buf, QDQ_FLOAT, buf, 8, &p, QDQ_INT8, 1.0f,
                                      1.0f, QDQ_FLOAT, dx, sizeof dx, NULL, 0, NULL, 0));
  CHECK_F32S(dx, want, 8);
  /* An empty shard at the end of an odd-length packed tensor (int4, n = 5): 0 bytes. */
  CHECK_OK(qdq_quantize_range(NULL, QDQ_FLOAT, buf, 5, &p, 5, 5, QDQ_INT4, NULL, 0));
  CHECK_OK(qdq_quantize_range(NULL, QDQ_FLOAT, buf, 5, &p, 3, 3, QDQ_INT4, NULL, 0));
}

static void test_errors(void) {
  const float x[4] = {1, 2, 3, 4}, s = 1.0f, s3[3] = {1, 1, 1};
  uint8_t y[16] = {0};
  qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
  const int64_t shape[2] = {2, 2}, shape3[1] = {3};
  qdq_tensor xt = mktensor(QDQ_FLOAT, 2, shape, x), st = mktensor(QDQ_FLOAT, 0, NULL, &s);
  qdq_node n13 = mknode("", 13, NULL, 0);
  qdq_tensor_info info;

  /* (QDQ_ARITY and QDQ_INTERNAL cannot be produced from C: see the top of this file.) */

  /* NULL pointers (and NULL with length 0, which is an empty buffer). */
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, NULL, 4, &p, QDQ_UINT8, y, sizeof y), QDQ_NULL_POINTER);
  CHECK_ERR("x is NULL");
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, NULL, QDQ_UINT8, y, sizeof y), QDQ_NULL_POINTER);
  CHECK_ERR("params");
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p, QDQ_UINT8, NULL, sizeof y), QDQ_NULL_POINTER);
  CHECK_ST(qdq_quantize_linear(NULL, NULL, &xt, &st, NULL, y, sizeof y), QDQ_NULL_POINTER);
  CHECK_ERR("node");
  CHECK_ST(qdq_quantize_linear(NULL, &n13, NULL, &st, NULL, y, sizeof y), QDQ_NULL_POINTER);
  CHECK_ST(qdq_quantize_linear_info(&n13, &xt, &st, NULL, NULL), QDQ_NULL_POINTER);
  const qdq_attribute unnamed[1] = {{NULL, 0}};
  qdq_node n_unnamed = mknode("", 13, unnamed, 1);
  CHECK_ST(qdq_quantize_linear_info(&n_unnamed, &xt, &st, NULL, &info), QDQ_NULL_POINTER);
  CHECK_ERR("attributes[0].name");
  qdq_node n_noattrs = mknode("", 13, NULL, 2);
  CHECK_ST(qdq_quantize_linear_info(&n_noattrs, &xt, &st, NULL, &info), QDQ_NULL_POINTER);
  CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, NULL, 0, &p, QDQ_UINT8, NULL, 0));
  CHECK_OK(qdq_dequantize(NULL, QDQ_INT4, NULL, 0, &p, QDQ_FLOAT, NULL, 0));
  CHECK_OK(qdq_quantize_range(NULL, QDQ_FLOAT, NULL, 0, &p, 0, 0, QDQ_UINT8, NULL, 0));
  CHECK_OK(qdq_mask_backward(NULL, QDQ_FLOAT, NULL, 0, NULL, 0, 1.0f, QDQ_FLOAT, NULL, 0));
  CHECK_OK(qdq_quantize_train(NULL, QDQ_FLOAT, NULL, 0, &p, QDQ_INT8, NULL, 0, NULL, 0));
  const int64_t empty_shape[2] = {0, 3};
  qdq_tensor et = mktensor(QDQ_FLOAT, 2, empty_shape, NULL);
  CHECK_OK(qdq_quantize_linear_info(&n13, &et, &st, NULL, &info));
  CHECK(info.bytes == 0);
  CHECK_OK(qdq_quantize_linear(NULL, &n13, &et, &st, NULL, NULL, 0));

  /* Buffers too small: nothing written. */
  memset(y, 0xEE, sizeof y);
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p, QDQ_UINT8, y, 3), QDQ_BUFFER_TOO_SMALL);
  CHECK_ERR("y");
  CHECK(y[0] == 0xEE);
  CHECK_ST(qdq_quantize_linear(NULL, &n13, &xt, &st, NULL, y, 3), QDQ_BUFFER_TOO_SMALL);
  float fy[4];
  CHECK_ST(qdq_dequantize(NULL, QDQ_UINT8, y, 4, &p, QDQ_FLOAT, fy, 15), QDQ_BUFFER_TOO_SMALL);

  /* Unknown or disallowed types. */
  CHECK_ST(qdq_quantize(NULL, 99, x, 4, &p, QDQ_UINT8, y, sizeof y), QDQ_UNSUPPORTED_TYPE);
  CHECK_ERR("x_dtype");
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p, 0, y, sizeof y), QDQ_UNSUPPORTED_TYPE);
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p, QDQ_FLOAT, y, sizeof y), QDQ_UNSUPPORTED_TYPE);
  CHECK_ST(qdq_dequantize(NULL, QDQ_UINT8, y, 4, &p, QDQ_INT8, fy, sizeof fy), QDQ_UNSUPPORTED_TYPE);
  qdq_tensor bad_t = mktensor(99, 2, shape, x);
  CHECK_ST(qdq_quantize_linear_info(&n13, &bad_t, &st, NULL, &info), QDQ_UNSUPPORTED_TYPE);
  const uint16_t xh[4] = {0, 0, 0, 0};
  qdq_tensor xht = mktensor(QDQ_FLOAT16, 2, shape, xh);
  CHECK_ST(qdq_quantize_linear_info(&n13, &xht, &st, NULL, &info), QDQ_UNSUPPORTED_TYPE);

  /* Opsets and domains. */
  qdq_node n9 = mknode("", 9, NULL, 0), n99 = mknode("", 99, NULL, 0);
  qdq_node nex = mknode("com.example", 1, NULL, 0);
  CHECK_ST(qdq_quantize_linear_info(&n9, &xt, &st, NULL, &info), QDQ_UNSUPPORTED_OPSET);
  CHECK_ST(qdq_quantize_linear_info(&n99, &xt, &st, NULL, &info), QDQ_UNSUPPORTED_OPSET);
  CHECK_ST(qdq_dequantize_linear_info(&nex, &xt, &st, NULL, &info), QDQ_UNSUPPORTED_OPSET);
  CHECK_ERR("com.example");

  /* Shapes and axes. */
  qdq_tensor st3 = mktensor(QDQ_FLOAT, 1, shape3, s3);
  const qdq_attribute axis1[1] = {{"axis", 1}}, axis5[1] = {{"axis", 5}};
  qdq_node n13a1 = mknode("", 13, axis1, 1), n13a5 = mknode("", 13, axis5, 1);
  CHECK_ST(qdq_quantize_linear_info(&n13a1, &xt, &st3, NULL, &info), QDQ_SHAPE_MISMATCH);
  /* axis is not read for a per-tensor scale; for a per-axis one it must be in range. */
  CHECK_OK(qdq_quantize_linear_info(&n13a5, &xt, &st, NULL, &info));
  const int64_t shape2[1] = {2};
  qdq_tensor st2 = mktensor(QDQ_FLOAT, 1, shape2, s3);
  CHECK_ST(qdq_quantize_linear_info(&n13a5, &xt, &st2, NULL, &info), QDQ_AXIS_OUT_OF_RANGE);
  qdq_params p3 = mkparams(QDQ_FLOAT, s3, 3, 0, NULL, 0);
  CHECK_OK(qdq_layout_per_axis(shape, 2, 1, &p3.layout));
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p3, QDQ_UINT8, y, sizeof y), QDQ_BUFFER_LENGTH);
  const int64_t negative[2] = {-1, 2};
  qdq_tensor negt = mktensor(QDQ_FLOAT, 2, negative, x);
  CHECK_ST(qdq_quantize_linear_info(&n13, &negt, &st, NULL, &info), QDQ_SHAPE_OVERFLOW);
  CHECK_ERR("x.shape[0]");

  /* Attributes. */
  const qdq_attribute unknown[1] = {{"foo", 1}}, blk[1] = {{"block_size", 2}};
  const qdq_attribute sat2[1] = {{"saturate", 2}}, twice[2] = {{"axis", 0}, {"axis", 1}};
  const qdq_attribute bad_out[1] = {{"output_dtype", 99}};
  qdq_node n_unknown = mknode("", 21, unknown, 1), n13blk = mknode("", 13, blk, 1);
  qdq_node n_sat2 = mknode("", 19, sat2, 1), n_twice = mknode("", 19, twice, 2);
  qdq_node n_bad_out = mknode("", 21, bad_out, 1);
  CHECK_ST(qdq_quantize_linear_info(&n_unknown, &xt, &st, NULL, &info), QDQ_UNKNOWN_ATTRIBUTE);
  CHECK_ERR("foo");
  CHECK_ST(qdq_quantize_linear_info(&n13blk, &xt, &st, NULL, &info), QDQ_UNKNOWN_ATTRIBUTE);
  CHECK_ST(qdq_quantize_linear_info(&n_sat2, &xt, &st, NULL, &info), QDQ_INVALID_ATTRIBUTE);
  CHECK_ERR("saturate");
  CHECK_ST(qdq_quantize_linear_info(&n_twice, &xt, &st, NULL, &info), QDQ_INVALID_ATTRIBUTE);
  CHECK_ST(qdq_quantize_linear_info(&n_bad_out, &xt, &st, NULL, &info), QDQ_INVALID_ATTRIBUTE);
  /* DequantizeLinear-25 with an e8m0 scale needs output_dtype. */
  const uint8_t e8m0 = 127, codes[4] = {1, 2, 3, 4};
  qdq_tensor e8t = mktensor(QDQ_FLOAT8E8M0, 0, NULL, &e8m0);
  qdq_tensor ct = mktensor(QDQ_UINT8, 2, shape, codes);
  qdq_node n25 = mknode("", 25, NULL, 0);
  CHECK_ST(qdq_dequantize_linear_info(&n25, &ct, &e8t, NULL, &info), QDQ_MISSING_ATTRIBUTE);
  const qdq_attribute out_f32[1] = {{"output_dtype", QDQ_FLOAT}};
  qdq_node n25o = mknode("", 25, out_f32, 1);
  CHECK_OK(qdq_dequantize_linear_info(&n25o, &ct, &e8t, NULL, &info));
  CHECK(info.dtype == QDQ_FLOAT && info.bytes == 16);

  /* Invalid arguments. */
  _Alignas(4) uint8_t raw[20] = {0};
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, raw + 1, 4, &p, QDQ_UINT8, y, sizeof y),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("x is not aligned");
  qdq_tensor misaligned = mktensor(QDQ_FLOAT, 2, shape, raw + 2);
  CHECK_ST(qdq_quantize_linear_info(&n13, &misaligned, &st, NULL, &info), QDQ_INVALID_ARGUMENT);
  qdq_params p_kind = p;
  p_kind.layout.kind = 7;
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p_kind, QDQ_UINT8, y, sizeof y),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("params.layout.kind");
  qdq_params p_blk0 = p;
  p_blk0.layout.kind = QDQ_LAYOUT_BLOCKED;
  p_blk0.layout.outer = 1;
  p_blk0.layout.axis_len = 4;
  p_blk0.layout.inner = 1;
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p_blk0, QDQ_UINT8, y, sizeof y),
           QDQ_INVALID_ARGUMENT);
  qdq_config cfg99 = {99, NULL, 0};
  CHECK_ST(qdq_quantize(&cfg99, QDQ_FLOAT, x, 4, &p, QDQ_UINT8, y, sizeof y),
           QDQ_INVALID_ARGUMENT);
  CHECK_ERR("isa");

  /* Types that must agree. */
  const uint16_t s_h = 0x3C00;
  qdq_tensor st_h = mktensor(QDQ_FLOAT16, 0, NULL, &s_h);
  qdq_node n19 = mknode("", 19, NULL, 0);
  CHECK_ST(qdq_quantize_linear_info(&n19, &xt, &st_h, NULL, &info), QDQ_TYPE_MISMATCH);
  const uint8_t zp_u8 = 0;
  qdq_tensor zt_u8 = mktensor(QDQ_UINT8, 0, NULL, &zp_u8);
  const qdq_attribute out_i4[1] = {{"output_dtype", QDQ_INT4}};
  qdq_node n21i4 = mknode("", 21, out_i4, 1);
  CHECK_ST(qdq_quantize_linear_info(&n21i4, &xt, &st, &zt_u8, &info), QDQ_TYPE_MISMATCH);
  qdq_params p_zp_u8 = mkparams(QDQ_FLOAT, &s, 1, QDQ_UINT8, &zp_u8, 1);
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p_zp_u8, QDQ_INT8, y, sizeof y), QDQ_TYPE_MISMATCH);

  /* A float8 zero point must be zero. */
  const uint8_t f8_one = 0x38, f8_negzero = 0x80;
  qdq_params p_f8 = mkparams(QDQ_FLOAT, &s, 1, QDQ_FLOAT8E4M3FN, &f8_one, 1);
  CHECK_ST(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p_f8, QDQ_FLOAT8E4M3FN, y, sizeof y),
           QDQ_NON_ZERO_ZERO_POINT);
  qdq_tensor zt_f8 = mktensor(QDQ_FLOAT8E4M3FN, 0, NULL, &f8_one);
  CHECK_ST(qdq_quantize_linear_info(&n19, &xt, &st, &zt_f8, &info), QDQ_NON_ZERO_ZERO_POINT);
  p_f8.zero_points = &f8_negzero; /* -0 is a zero */
  CHECK_OK(qdq_quantize(NULL, QDQ_FLOAT, x, 4, &p_f8, QDQ_FLOAT8E4M3FN, y, sizeof y));

  /* Training-only restrictions. */
  const int32_t xi[4] = {1, 2, 3, 4};
  CHECK_ST(qdq_quantize_train(NULL, QDQ_INT32, xi, 4, &p, QDQ_INT8, y, sizeof y, y + 4, 1),
           QDQ_UNSUPPORTED_TYPE);
}

/* ---------------------------------------------------------------------------------- */
/* A fixed set of calls whose outputs must not depend on the ISA or the threads. */

typedef struct {
  size_t n, nblk;
  float *x, *dy, *blk_scales;
  uint8_t *codes, *codes_i4, *mask;
  int8_t *blk_zps;
} suite_in;

typedef struct {
  uint8_t *q_u8, *q_i4, *q_f8, *dyn, *train_y, *train_mask, *fq_mask;
  float *dq_f32, *fq_y, *qb_dx, *mb_dx, *dqb_dx, *fqb_dx, *fqb_blk_ds, *fqb_blk_dzp, *sg_ds;
  uint16_t *dq_f16;
  float dyn_scale, fqb_ds, fqb_dzp;
  uint8_t dyn_zp;
} suite_out;

static uint32_t g_lcg = 12345u;
static uint32_t lcg(void) {
  g_lcg = g_lcg * 1664525u + 1013904223u;
  return g_lcg >> 8;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n == 0 ? 1 : n, size);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

static suite_in suite_inputs(size_t n) {
  suite_in in;
  in.n = n;
  in.nblk = (n + 63) / 64;
  in.x = xcalloc(n, sizeof(float));
  in.dy = xcalloc(n, sizeof(float));
  in.codes = xcalloc(n, 1);
  in.codes_i4 = xcalloc((n + 1) / 2, 1);
  in.mask = xcalloc((n + 7) / 8, 1);
  in.blk_scales = xcalloc(in.nblk, sizeof(float));
  in.blk_zps = xcalloc(in.nblk, 1);
  for (size_t i = 0; i < n; i++) {
    in.x[i] = ((float)(lcg() % 160001u) - 80000.0f) / 400.0f; /* [-200, 200], steps 1/400 */
    in.dy[i] = ((float)(lcg() % 4001u) - 2000.0f) / 1000.0f;
    in.codes[i] = (uint8_t)lcg();
  }
  /* Ties, signed zeros, infinities and NaN. */
  const float special[6] = {2.5f, -0.0f, INFINITY, -INFINITY, NAN, 0.375f};
  for (size_t i = 0; i < n; i += 97) in.x[i] = special[(i / 97) % 6];
  for (size_t i = 0; i < (n + 1) / 2; i++) in.codes_i4[i] = (uint8_t)lcg();
  for (size_t i = 0; i < (n + 7) / 8; i++) in.mask[i] = (uint8_t)lcg();
  if (n % 8 != 0) in.mask[n / 8] &= (uint8_t)((1u << (n % 8)) - 1u);
  for (size_t k = 0; k < in.nblk; k++) {
    in.blk_scales[k] = 0.5f + (float)(k % 7) * 0.25f;
    in.blk_zps[k] = (int8_t)((int)(k % 5) - 2);
  }
  return in;
}

static suite_out suite_outputs(size_t n, size_t nblk) {
  suite_out o;
  memset(&o, 0, sizeof o);
  o.q_u8 = xcalloc(n, 1);
  o.q_i4 = xcalloc((n + 1) / 2, 1);
  o.q_f8 = xcalloc(n, 1);
  o.dyn = xcalloc(n, 1);
  o.train_y = xcalloc(n, 1);
  o.train_mask = xcalloc((n + 7) / 8, 1);
  o.fq_mask = xcalloc((n + 7) / 8, 1);
  o.dq_f32 = xcalloc(n, sizeof(float));
  o.fq_y = xcalloc(n, sizeof(float));
  o.qb_dx = xcalloc(n, sizeof(float));
  o.mb_dx = xcalloc(n, sizeof(float));
  o.dqb_dx = xcalloc(n, sizeof(float));
  o.fqb_dx = xcalloc(n, sizeof(float));
  o.fqb_blk_ds = xcalloc(nblk, sizeof(float));
  o.fqb_blk_dzp = xcalloc(nblk, sizeof(float));
  o.sg_ds = xcalloc(nblk, sizeof(float));
  o.dq_f16 = xcalloc(n, sizeof(uint16_t));
  return o;
}

static void suite_free(suite_out *o) {
  void *all[17] = {o->q_u8, o->q_i4, o->q_f8, o->dyn, o->train_y, o->train_mask, o->fq_mask,
                   o->dq_f32, o->fq_y, o->qb_dx, o->mb_dx, o->dqb_dx, o->fqb_dx,
                   o->fqb_blk_ds, o->fqb_blk_dzp, o->sg_ds, o->dq_f16};
  for (int i = 0; i < 17; i++) free(all[i]);
}

static void suite_in_free(suite_in *in) {
  void *all[7] = {in->x, in->dy, in->codes, in->codes_i4, in->mask, in->blk_scales, in->blk_zps};
  for (int i = 0; i < 7; i++) free(all[i]);
}

/* Runs every call of the suite with `cfg`; returns 1 when all returned QDQ_OK. */
static int suite_run(const qdq_config *cfg, const suite_in *in, suite_out *o) {
  const size_t n = in->n, nb = in->nblk, m = (n + 7) / 8;
  const float s = 0.75f;
  const uint8_t zp = 100;
  int ok = 1;
  qdq_params pt = mkparams(QDQ_FLOAT, &s, 1, QDQ_UINT8, &zp, 1);
  qdq_params pf8 = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
  qdq_params blk = mkparams(QDQ_FLOAT, in->blk_scales, nb, 0, NULL, 0);
  blk.layout.kind = QDQ_LAYOUT_BLOCKED; /* the factors filled in directly */
  blk.layout.outer = 1;
  blk.layout.axis_len = n;
  blk.layout.inner = 1;
  blk.layout.block = 64;
  qdq_params blkz = blk;
  blkz.zero_point_dtype = QDQ_INT8;
  blkz.zero_points = in->blk_zps;
  blkz.n_zero_points = nb;

  ok &= CHECK_OK(qdq_quantize(cfg, QDQ_FLOAT, in->x, n, &pt, QDQ_UINT8, o->q_u8, n));
  ok &= CHECK_OK(qdq_quantize(cfg, QDQ_FLOAT, in->x, n, &blk, QDQ_INT4, o->q_i4, (n + 1) / 2));
  ok &= CHECK_OK(qdq_quantize(cfg, QDQ_FLOAT, in->x, n, &pf8, QDQ_FLOAT8E4M3FN, o->q_f8, n));
  ok &= CHECK_OK(qdq_dequantize(cfg, QDQ_UINT8, in->codes, n, &pt, QDQ_FLOAT, o->dq_f32, n * 4));
  ok &= CHECK_OK(qdq_dequantize(cfg, QDQ_INT4, in->codes_i4, n, &blk, QDQ_FLOAT16, o->dq_f16, n * 2));
  ok &= CHECK_OK(qdq_dynamic_quantize(cfg, in->dy, n, o->dyn, n, &o->dyn_scale, &o->dyn_zp));
  ok &= CHECK_OK(qdq_quantize_train(cfg, QDQ_FLOAT, in->x, n, &pt, QDQ_UINT8, o->train_y, n,
                                    o->train_mask, m));
  ok &= CHECK_OK(qdq_fake_quantize(cfg, QDQ_FLOAT, in->x, n, &blkz, QDQ_INT8, QDQ_FLOAT, o->fq_y,
                                   n * 4, o->fq_mask, m));
  ok &= CHECK_OK(qdq_quantize_backward(cfg, QDQ_FLOAT, in->dy, n, in->mask, m, &pt, QDQ_UINT8,
                                       0.5f, QDQ_FLOAT, o->qb_dx, n * 4));
  ok &= CHECK_OK(qdq_mask_backward(cfg, QDQ_FLOAT, in->dy, n, in->mask, m, 0.25f, QDQ_FLOAT,
                                   o->mb_dx, n * 4));
  ok &= CHECK_OK(qdq_dequantize_backward(cfg, QDQ_FLOAT, in->dy, n, &blk, 1.5f, QDQ_FLOAT,
                                         o->dqb_dx, n * 4));
  ok &= CHECK_OK(qdq_fake_quantize_backward(cfg, QDQ_FLOAT, in->dy, QDQ_FLOAT, in->x, n, &pt,
                                            QDQ_UINT8, 0.5f, 0.125f, QDQ_FLOAT, o->fqb_dx, n * 4,
                                            &o->fqb_ds, 1, &o->fqb_dzp, 1));
  ok &= CHECK_OK(qdq_fake_quantize_backward(cfg, QDQ_FLOAT, in->dy, QDQ_FLOAT, in->x, n, &blkz,
                                            QDQ_INT8, 1.0f, 1.0f, QDQ_FLOAT, NULL, 0,
                                            o->fqb_blk_ds, nb, o->fqb_blk_dzp, nb));
  ok &= CHECK_OK(qdq_dequantize_scale_grad(cfg, QDQ_FLOAT, in->dy, QDQ_INT8, in->codes, n, &blkz,
                                           o->sg_ds, nb));
  return ok;
}

/* Checks that two runs of the suite gave the same bytes; `what` names the run. */
static void suite_compare(const suite_out *a, const suite_out *b, size_t n, size_t nb,
                          const char *what) {
  const size_t m = (n + 7) / 8;
  struct {
    const char *name;
    const void *a, *b;
    size_t bytes;
  } fields[21] = {
      {"quantize u8", a->q_u8, b->q_u8, n},
      {"quantize int4 blocked", a->q_i4, b->q_i4, (n + 1) / 2},
      {"quantize e4m3fn", a->q_f8, b->q_f8, n},
      {"dequantize u8", a->dq_f32, b->dq_f32, n * 4},
      {"dequantize int4 blocked f16", a->dq_f16, b->dq_f16, n * 2},
      {"dynamic y", a->dyn, b->dyn, n},
      {"dynamic scale", &a->dyn_scale, &b->dyn_scale, 4},
      {"dynamic zero point", &a->dyn_zp, &b->dyn_zp, 1},
      {"quantize_train y", a->train_y, b->train_y, n},
      {"quantize_train mask", a->train_mask, b->train_mask, m},
      {"fake_quantize y", a->fq_y, b->fq_y, n * 4},
      {"fake_quantize mask", a->fq_mask, b->fq_mask, m},
      {"quantize_backward", a->qb_dx, b->qb_dx, n * 4},
      {"mask_backward", a->mb_dx, b->mb_dx, n * 4},
      {"dequantize_backward", a->dqb_dx, b->dqb_dx, n * 4},
      {"fake_quantize_backward dx", a->fqb_dx, b->fqb_dx, n * 4},
      {"fake_quantize_backward ds", &a->fqb_ds, &b->fqb_ds, 4},
      {"fake_quantize_backward dzp", &a->fqb_dzp, &b->fqb_dzp, 4},
      {"fake_quantize_backward blocked ds", a->fqb_blk_ds, b->fqb_blk_ds, nb * 4},
      {"fake_quantize_backward blocked dzp", a->fqb_blk_dzp, b->fqb_blk_dzp, nb * 4},
      {"dequantize_scale_grad", a->sg_ds, b->sg_ds, nb * 4},
  };
  for (int i = 0; i < 21; i++) {
    int same = memcmp(fields[i].a, fields[i].b, fields[i].bytes) == 0;
    if (!same) fprintf(stderr, "  %s: %s differs\n", what, fields[i].name);
    CHECK(same);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Forced ISAs. */

static void test_forced_isas(void) {
  const size_t n = 5003; /* not a multiple of any vector width */
  suite_in in = suite_inputs(n);
  suite_out ref = suite_outputs(n, in.nblk), got = suite_outputs(n, in.nblk);
  qdq_config scalar = {QDQ_ISA_SCALAR, NULL, 0};
  CHECK(suite_run(&scalar, &in, &ref));
  const int32_t isas[4] = {QDQ_ISA_AUTO, QDQ_ISA_AVX2, QDQ_ISA_AVX512, QDQ_ISA_NEON};
  for (int i = 0; i < 4; i++) {
    qdq_config cfg = {isas[i], NULL, 0};
    if (qdq_isa_available(isas[i])) {
      CHECK(suite_run(&cfg, &in, &got));
      suite_compare(&got, &ref, n, in.nblk, qdq_isa_name(isas[i]));
      printf("isa %-7s identical to scalar\n", qdq_isa_name(isas[i]));
    } else {
      const float x = 1.0f, s = 1.0f;
      uint8_t y = 0;
      qdq_params p = mkparams(QDQ_FLOAT, &s, 1, 0, NULL, 0);
      CHECK_ST(qdq_quantize(&cfg, QDQ_FLOAT, &x, 1, &p, QDQ_UINT8, &y, 1), QDQ_ISA_UNAVAILABLE);
      float scale = 0.0f;
      uint8_t zp = 0;
      CHECK_ST(qdq_dynamic_quantize(&cfg, &x, 1, &y, 1, &scale, &zp), QDQ_ISA_UNAVAILABLE);
      printf("isa %-7s skipped (this CPU lacks it; forcing it gives QDQ_ISA_UNAVAILABLE)\n",
             qdq_isa_name(isas[i]));
    }
  }
  suite_free(&ref);
  suite_free(&got);
  suite_in_free(&in);
}

/* ---------------------------------------------------------------------------------- */
/* Engine thread pools. */

#define POOL_WORKERS 4

/* A persistent pool: POOL_WORKERS threads woken per parallel_for; workers and the calling
   thread claim task indices from an atomic counter. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  pthread_t threads[POOL_WORKERS];
  unsigned long generation;
  int stop;
  size_t busy;
  qdq_task_fn task;
  void *task_ctx;
  size_t n_tasks;
  atomic_size_t next;
  atomic_size_t worker_tasks, calls, max_tasks;
} pool_t;

static void pool_claim(pool_t *p, qdq_task_fn task, void *task_ctx, size_t n, int worker) {
  for (;;) {
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= n) break;
    task(task_ctx, i);
    if (worker) atomic_fetch_add(&p->worker_tasks, 1);
  }
}

static void *pool_worker(void *arg) {
  pool_t *p = arg;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    qdq_task_fn task = p->task;
    void *task_ctx = p->task_ctx;
    size_t n = p->n_tasks;
    pthread_mutex_unlock(&p->mu);
    pool_claim(p, task, task_ctx, n, 1);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void pool_parallel_for(void *pool_ctx, size_t n_tasks, qdq_task_fn task, void *task_ctx) {
  pool_t *p = pool_ctx;
  atomic_fetch_add(&p->calls, 1);
  if (n_tasks > atomic_load(&p->max_tasks)) atomic_store(&p->max_tasks, n_tasks);
  pthread_mutex_lock(&p->mu);
  p->task = task;
  p->task_ctx = task_ctx;
  p->n_tasks = n_tasks;
  atomic_store(&p->next, 0);
  p->busy = POOL_WORKERS;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  pool_claim(p, task, task_ctx, n_tasks, 0); /* the calling thread helps */
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

static int pool_start(pool_t *p) {
  memset(p, 0, sizeof *p);
  atomic_init(&p->next, 0);
  atomic_init(&p->worker_tasks, 0);
  atomic_init(&p->calls, 0);
  atomic_init(&p->max_tasks, 0);
  if (pthread_mutex_init(&p->mu, NULL) != 0 || pthread_cond_init(&p->wake, NULL) != 0 ||
      pthread_cond_init(&p->done, NULL) != 0) {
    return 0;
  }
  for (int i = 0; i < POOL_WORKERS; i++) {
    if (pthread_create(&p->threads[i], NULL, pool_worker, p) != 0) return 0;
  }
  return 1;
}

static void pool_stop(pool_t *p) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < POOL_WORKERS; i++) pthread_join(p->threads[i], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
}

/* Runs every task on the calling thread, last first. */
static void reverse_parallel_for(void *pool_ctx, size_t n_tasks, qdq_task_fn task, void *task_ctx) {
  atomic_fetch_add((atomic_size_t *)pool_ctx, 1);
  for (size_t i = n_tasks; i-- > 0;) task(task_ctx, i);
}

/* A broken pool that runs only every third task: qdq runs the unclaimed parts itself. */
static void skipping_parallel_for(void *pool_ctx, size_t n_tasks, qdq_task_fn task, void *task_ctx) {
  atomic_fetch_add((atomic_size_t *)pool_ctx, 1);
  for (size_t i = 0; i < n_tasks; i += 3) task(task_ctx, i);
}

/* A pool that runs nothing at all. */
static void idle_parallel_for(void *pool_ctx, size_t n_tasks, qdq_task_fn task, void *task_ctx) {
  (void)n_tasks;
  (void)task;
  (void)task_ctx;
  atomic_fetch_add((atomic_size_t *)pool_ctx, 1);
}

static void test_thread_pools(void) {
  const size_t n = 300001;
  suite_in in = suite_inputs(n);
  suite_out ref = suite_outputs(n, in.nblk), got = suite_outputs(n, in.nblk);
  CHECK(suite_run(NULL, &in, &ref)); /* single-threaded */

  pool_t pool;
  if (!CHECK(pool_start(&pool))) return;
  qdq_thread_pool tp = {pool_parallel_for, &pool, POOL_WORKERS};
  qdq_config cfg = {QDQ_ISA_AUTO, &tp, 1};
  CHECK(suite_run(&cfg, &in, &got));
  suite_compare(&got, &ref, n, in.nblk, "pthread pool");
  CHECK(atomic_load(&pool.calls) >= 1 && atomic_load(&pool.max_tasks) >= 2);
  printf("pthread pool: %zu parallel_for calls, up to %zu tasks, %zu tasks run by workers\n",
         (size_t)atomic_load(&pool.calls), (size_t)atomic_load(&pool.max_tasks),
         (size_t)atomic_load(&pool.worker_tasks));
  /* The same pool with the scalar kernels. */
  qdq_config cfg_scalar = {QDQ_ISA_SCALAR, &tp, 1};
  CHECK(suite_run(&cfg_scalar, &in, &got));
  suite_compare(&got, &ref, n, in.nblk, "pthread pool, scalar");
  pool_stop(&pool);

  struct {
    const char *name;
    qdq_parallel_for_fn fn;
  } odd[3] = {{"reverse pool", reverse_parallel_for},
              {"skipping pool", skipping_parallel_for},
              {"idle pool", idle_parallel_for}};
  for (int i = 0; i < 3; i++) {
    atomic_size_t calls;
    atomic_init(&calls, 0);
    qdq_thread_pool op = {odd[i].fn, &calls, 3};
    qdq_config ocfg = {QDQ_ISA_AUTO, &op, 1};
    memset(got.q_u8, 0, n);
    CHECK(suite_run(&ocfg, &in, &got));
    suite_compare(&got, &ref, n, in.nblk, odd[i].name);
    CHECK(atomic_load(&calls) > 0);
  }
  /* A pool without parallel_for, or with fewer than 2 threads: the calling thread. */
  qdq_thread_pool none = {NULL, NULL, 8};
  qdq_config ncfg = {QDQ_ISA_AUTO, &none, 1};
  CHECK(suite_run(&ncfg, &in, &got));
  suite_compare(&got, &ref, n, in.nblk, "pool without parallel_for");
  atomic_size_t one_calls;
  atomic_init(&one_calls, 0);
  qdq_thread_pool one = {idle_parallel_for, &one_calls, 1};
  qdq_config ocfg1 = {QDQ_ISA_AUTO, &one, 1};
  CHECK(suite_run(&ocfg1, &in, &got));
  suite_compare(&got, &ref, n, in.nblk, "one-thread pool");
  CHECK(atomic_load(&one_calls) == 0);

  suite_free(&ref);
  suite_free(&got);
  suite_in_free(&in);
}

/* ---------------------------------------------------------------------------------- */

int main(void) {
  test_queries();
  test_tensor_quantize();
  test_tensor_dequantize();
  test_tensor_dynamic();
  test_tensor_microsoft();
  test_layouts();
  test_slice_quantize();
  test_slice_dequantize();
  test_slice_ranges();
  test_slice_dynamic();
  test_train();
  test_scaled();
  test_overlap();
  test_errors();
  test_forced_isas();
  test_thread_pools();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
