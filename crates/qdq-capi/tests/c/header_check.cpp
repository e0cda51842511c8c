// header_check.cpp: include/qdq.h parsed as C++17 (extern "C", enums, structs, function
// pointer types), then linked against libqdq.a and run. Built by `cargo xtask capi-test`
// with `c++ -std=c++17 -Wall -Wextra -Werror -pedantic`.

#include "qdq.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

// The C enums keep their values and are usable as C++ enums.
static_assert(QDQ_OK == 0 && QDQ_INTERNAL == 17, "qdq_status values");
static_assert(QDQ_FLOAT == 1 && QDQ_INT4 == 22 && QDQ_FLOAT6E3M2 == 28, "qdq_dtype values");
static_assert(QDQ_ISA_NEON == 4 && QDQ_LAYOUT_BLOCKED == 2, "qdq_isa / qdq_layout_kind values");
// The structs are plain data: an engine may zero them, copy them, and pass them across.
static_assert(std::is_trivially_copyable<qdq_params>::value, "qdq_params is POD");
static_assert(std::is_standard_layout<qdq_config>::value, "qdq_config is standard layout");
static_assert(std::is_same<decltype(&qdq_quantize),
                           qdq_status (*)(const qdq_config *, int32_t, const void *, size_t,
                                          const qdq_params *, int32_t, void *, size_t)>::value,
              "qdq_quantize's signature");

// An engine's parallel_for with C language linkage: runs every task inline, counting calls.
extern "C" {
static void inline_parallel_for(void *ctx, size_t n_tasks, qdq_task_fn task, void *task_ctx) {
  ++*static_cast<size_t *>(ctx);
  for (size_t i = 0; i < n_tasks; i++) task(task_ctx, i);
}
}

int main() {
  const float x[4] = {-1.0f, 0.5f, 2.0f, 300.0f};
  const float scale = 0.5f;
  qdq_params params{};  // zeroed: per-tensor, no zero points
  params.scale_dtype = QDQ_FLOAT;
  params.scales = &scale;
  params.n_scales = 1;

  size_t calls = 0;
  qdq_thread_pool pool{inline_parallel_for, &calls, 2};
  qdq_config cfg{QDQ_ISA_AUTO, &pool, 1};

  int8_t y[4] = {};
  qdq_status st = qdq_quantize(&cfg, QDQ_FLOAT, x, 4, &params, QDQ_INT8, y, sizeof y);
  const int8_t want[4] = {-2, 1, 4, 127};
  if (st != QDQ_OK || std::memcmp(y, want, sizeof y) != 0) {
    std::fprintf(stderr, "header_check: qdq_quantize: %s: %s\n", qdq_status_name(st), qdq_last_error());
    return 1;
  }
  std::printf("header_check: qdq %s from C++ OK\n", qdq_version());
  return 0;
}
