// matmul_batch_invariant.cu: MatmulAlgo::batch_invariant on CUDA, cuBLASLt with the algorithm
// pinned. cuBLAS's default path picks tiles and split-K from the whole shape (and from the
// SM count), so a row's bits change with M. Here the algorithm for a product is chosen once
// from the shape with M replaced by a constant and the SM count by a constant, then reused for
// every M: the same kernel, tile, stages and cluster, K never split, so each output's K loop
// runs in one order whatever M is, and on a GPU with any number of SMs.
//
// A product whose K runs over the samples (a weight gradient a^T g; BatchInvariantGemm's
// k_over_rows) has no rows to keep apart: its algorithm follows the whole shape, and it may
// split K with an out-of-place reduction in a fixed order (never cuBLASLt's in-place scheme,
// whose order follows the blocks' arrival). It is still chosen under the constant SM count,
// so it gives the same bits run to run and on any GPU of the architecture.
//
// Which GPU runs it must not matter either. cuBLASLt's heuristic weighs the device (clocks,
// bandwidth, L2; not only the SM count), so an H100 and an H200 can get different tiles or
// splits for the same shape. The algorithm therefore comes from a table built into the binary
// (gemm_algo_table.inc: explicit configurations, chosen once by the heuristic on an H200 for
// every product the shipped configs run): the exact shape's row, else the row of the nearest
// shape of the same kind that cuBLASLt accepts, and only when no row fits the heuristic (with a
// warning: those bits may differ on another GPU model). BITGRAD_GEMM_TABLE=0 skips the table;
// BITGRAD_GEMM_ALGO_LOG=FILE appends every choice as a table row (how the table is made).
//
// Invariance is a property of the cuBLASLt build, not a promise of its documentation: the
// tests check it (tests/test_gemm.cpp: rows of M = 1, 7, 64, 4097 products bitwise equal, and
// the same bits under two SM-count launch targets).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "cublaslt_problem.cuh"
#include "cuda_kernels.h"
#include "device_runtime.h"

namespace bg::cuda {
namespace {

constexpr const char* kOp = "matmul_batch_invariant";
// The M the algorithm is chosen for (rows of the products it serves: a training batch's tokens).
constexpr int64_t kChosenForRows = 4096;
// The SM count the algorithm is chosen for: an H100/H200 SXM's. Any other GPU of the
// architecture runs the same algorithm, so the same bits. A simulated device (device_runtime.h)
// replaces it, so that a table miss, whose heuristic choice follows the device, shows on one GPU.
constexpr int32_t kChosenForSms = 132;
int32_t heuristic_sms() {
  const int sms = simulated_device().sm_count;
  return sms > 0 ? sms : kChosenForSms;
}
using Problem = LtProblem;
using Descriptors = LtDescriptors;
constexpr size_t kWorkspaceBytes = kCublasLtWorkspaceBytes;

// What an algorithm is chosen from: everything but M (and the batch count and the M-dependent
// batch strides) for products over rows; the whole problem for a K over rows. The last field
// names an epilogue cuBLASLt supports on fewer algorithms, chosen with it (EpilogueKind; rows
// made before it have none, and a row of 18 values leaves it 0).
using Key = std::array<int64_t, 19>;

enum class EpilogueKind : int64_t { plain = 0, gelu = 1, dgelu = 2 };

Key key_of(const Problem& p, bool k_over_rows) {
  Key key{int64_t(p.op_a),
          int64_t(p.op_b),
          p.n,
          p.k,
          p.ld_a,
          p.ld_b,
          p.ld_c,
          p.batch > 1,
          p.stride_a,
          int64_t(p.type_a),
          int64_t(p.type_b),
          int64_t(p.type_c),
          int64_t(p.compute),
          k_over_rows,
          0,
          0,
          0,
          0};
  key[18] = int64_t(p.gelu_input    ? EpilogueKind::gelu
                    : p.dgelu_input ? EpilogueKind::dgelu
                                    : EpilogueKind::plain);
  if (k_over_rows) {
    key[14] = p.m;
    key[15] = p.batch;
    key[16] = p.stride_b;
    key[17] = p.stride_c;
  }
  return key;
}

std::string shape_text(const Problem& p) {
  return "M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k) +
         (p.batch > 1 ? " batch=" + std::to_string(p.batch) : "");
}

// The problem an algorithm is chosen for: M (and the batch count and M-dependent strides)
// replaced by constants unless K runs over the rows.
Problem chosen_for(const Problem& p, bool k_over_rows) {
  if (k_over_rows) return p;
  Problem q = p;
  q.m = kChosenForRows;
  if (p.batch > 1) {
    q.batch = 2;
    q.stride_b = p.ld_b * kChosenForRows;
    q.stride_c = p.ld_c * kChosenForRows;
  }
  return q;
}

// An algorithm configuration: everything cuBLASLt's algorithm descriptor holds beyond the
// problem's types (cublasLtMatmulAlgoConfigAttributes_t).
struct AlgoConfig {
  int32_t id;
  uint32_t tile, stages;
  int32_t splitk;
  uint32_t reduction, swizzle, custom;
  uint16_t inner, cluster;
};
struct AlgoRow {
  Key key;
  AlgoConfig config;
};

const std::vector<AlgoRow>& algo_table() {
  static const std::vector<AlgoRow> rows = {
#include "gemm_algo_table.inc"
  };
  return rows;
}

template <typename V>
V algo_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  V v{};
  size_t written = 0;
  check_cublas(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written), kOp,
               "AlgoConfigGetAttribute");
  return v;
}

AlgoConfig config_of(const cublasLtMatmulAlgo_t& algo) {
  return {algo_attribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID),
          algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
          algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
          algo_attribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
          algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
          algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
          algo_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
          algo_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID),
          algo_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)};
}

// The configuration as an algorithm for problem p, if cuBLASLt accepts it for p's descriptors
// within the workspace.
bool algo_from_config(cublasLtHandle_t handle, const Problem& p, const Descriptors& d,
                      const AlgoConfig& c, cublasLtMatmulAlgo_t* algo) {
  if (cublasLtMatmulAlgoInit(handle, p.compute, CUDA_R_32F, p.type_a, p.type_b, p.type_c, p.type_c,
                             c.id, algo) != CUBLAS_STATUS_SUCCESS)
    return false;
  auto set = [&](cublasLtMatmulAlgoConfigAttributes_t attr, auto v) {
    return cublasLtMatmulAlgoConfigSetAttribute(algo, attr, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS;
  };
  if (!set(CUBLASLT_ALGO_CONFIG_TILE_ID, c.tile) ||
      !set(CUBLASLT_ALGO_CONFIG_STAGES_ID, c.stages) ||
      !set(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.splitk) ||
      !set(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c.reduction) ||
      !set(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c.swizzle) ||
      !set(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c.custom) ||
      !set(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c.inner) ||
      !set(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c.cluster))
    return false;
  cublasLtMatmulHeuristicResult_t check{};
  return cublasLtMatmulAlgoCheck(handle, d.desc, d.a, d.b, d.c, d.c, algo, &check) ==
             CUBLAS_STATUS_SUCCESS &&
         check.workspaceSize <= kWorkspaceBytes;
}

// Key fields that must match for a row to serve another shape: the operations, batching, the
// types, the compute type, whether K runs over the rows and the epilogue kind.
bool same_kind(const Key& a, const Key& b) {
  for (int i : {0, 1, 7, 9, 10, 11, 12, 13, 18})
    if (a[size_t(i)] != b[size_t(i)]) return false;
  return true;
}

// The last device-free tier: a row of the same types and compute type, whatever its operations,
// batching or kind, that cuBLASLt accepts for the problem. A product whose rows are kept apart
// takes no row that splits K.
bool same_types(const Key& a, const Key& b, const AlgoConfig& row_config) {
  for (int i : {9, 10, 11, 12})
    if (a[size_t(i)] != b[size_t(i)]) return false;
  return b[13] != 0 || row_config.splitk <= 1;
}

// How far apart two shapes of one kind are: log2 ratios of N and K (and of M when K runs over
// the rows).
double shape_distance(const Key& a, const Key& b) {
  auto far = [](int64_t x, int64_t y) {
    return std::fabs(std::log2(double(std::max<int64_t>(x, 1)) / double(std::max<int64_t>(y, 1))));
  };
  return far(a[2], b[2]) + far(a[3], b[3]) + (a[13] ? far(a[14], b[14]) : 0.0);
}

enum class AlgoSource { table, nearest_row, heuristic };
GemmAlgoSources g_sources;  // counted per choice (each shape is chosen once per handle)

void log_choice(const Key& key, const AlgoConfig& c, const Problem& q, AlgoSource source) {
  const char* path = std::getenv("BITGRAD_GEMM_ALGO_LOG");
  if (!path || !*path) return;
  FILE* f = std::fopen(path, "a");
  if (!f) return;
  std::fprintf(f, "{{");
  for (size_t i = 0; i < key.size(); ++i)
    std::fprintf(f, "%s%lld", i ? ", " : "", (long long)key[i]);
  std::fprintf(f, "}, {%d, %u, %u, %d, %u, %u, %u, %u, %u}},  // %s %s\n", c.id, c.tile, c.stages,
               c.splitk, c.reduction, c.swizzle, c.custom, unsigned(c.inner), unsigned(c.cluster),
               shape_text(q).c_str(),
               source == AlgoSource::table         ? "table"
               : source == AlgoSource::nearest_row ? "nearest row"
                                                   : "heuristic");
  std::fclose(f);
}

bool table_enabled() {
  const char* v = std::getenv("BITGRAD_GEMM_TABLE");
  return !(v && std::string(v) == "0");
}

cublasLtMatmulAlgo_t heuristic_algo(cublasLtHandle_t handle, const Problem& q, const Descriptors& d,
                                    bool k_over_rows);

cublasLtMatmulAlgo_t choose_algo(cublasLtHandle_t handle, const Problem& p, bool k_over_rows) {
  const Problem q = chosen_for(p, k_over_rows);
  Descriptors d(q, heuristic_sms());
  const Key key = key_of(p, k_over_rows);
  cublasLtMatmulAlgo_t algo{};
  if (table_enabled()) {
    // Rows of the same kind first, nearest shape first; then rows of the same types.
    std::vector<std::pair<double, const AlgoRow*>> near, typed;
    for (const AlgoRow& row : algo_table()) {
      if (row.key == key && algo_from_config(handle, q, d, row.config, &algo)) {
        ++g_sources.table;
        log_choice(key, row.config, q, AlgoSource::table);
        return algo;
      }
      if (same_kind(row.key, key))
        near.emplace_back(shape_distance(row.key, key), &row);
      else if (same_types(row.key, key, row.config))
        typed.emplace_back(shape_distance(row.key, key), &row);
    }
    auto by_distance = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::stable_sort(near.begin(), near.end(), by_distance);
    std::stable_sort(typed.begin(), typed.end(), by_distance);
    near.insert(near.end(), typed.begin(), typed.end());
    for (const auto& [distance, row] : near)
      if (algo_from_config(handle, q, d, row->config, &algo)) {
        ++g_sources.nearest_row;
        log_choice(key, row->config, q, AlgoSource::nearest_row);
        return algo;
      }
    std::fprintf(stderr,
                 "[matmul_batch_invariant] %s: no row of the algorithm table fits; cuBLASLt's "
                 "heuristic chose one, and its bits may differ on another GPU model\n",
                 shape_text(q).c_str());
  }
  algo = heuristic_algo(handle, q, d, k_over_rows);
  ++g_sources.heuristic;
  log_choice(key, config_of(algo), q, AlgoSource::heuristic);
  return algo;
}

// cuBLASLt's heuristic for q (under the constant SM count), K never split for rows kept apart.
cublasLtMatmulAlgo_t heuristic_algo(cublasLtHandle_t handle, const Problem& q, const Descriptors& d,
                                    bool k_over_rows) {
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), kOp, "MatmulPreferenceCreate");
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    check_cublas(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)), kOp,
                 "MatmulPreferenceSetAttribute");
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(kWorkspaceBytes));
  const uint32_t schemes =
      k_over_rows
          ? uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)
          : uint32_t(CUBLASLT_REDUCTION_SCHEME_NONE);
  set_pref(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, schemes);
  // Core hands this kernel 16-byte-aligned operands, so the algorithm may assume them.
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    set_pref(attr, uint32_t(16));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle, d.desc, d.a, d.b, d.c, d.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    kernel_fail(kOp, "cuBLASLt offers no algorithm for " + shape_text(q) + " (status " +
                         std::to_string(int(st)) + ")");
  cublasLtMatmulAlgo_t algo = result.algo;
  if (!k_over_rows) {
    // The mask already asked for no reduction; pinning it says so where it matters.
    const int32_t one = 1;
    const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
    check_cublas(
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, 4), kOp,
        "AlgoConfigSetAttribute");
    check_cublas(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                      &none, 4),
                 kOp, "AlgoConfigSetAttribute");
  }
  return algo;
}

cublasLtMatmulAlgo_t pinned_algo(cublasLtHandle_t handle, const Problem& p, bool k_over_rows) {
  static std::mutex mu;
  // The table switch and the heuristic's SM count are part of the key: tests change both. So is
  // the epilogue, which an algorithm must support (a table row serves a bias and a residual as
  // it is; the GELU and dGELU epilogues have rows of their own, key_of's last field). Both are
  // elementwise on a row's own sums, so a row's bits still follow from its own inputs.
  static std::map<std::tuple<cublasLtHandle_t, Key, bool, int32_t, bool, bool>,
                  cublasLtMatmulAlgo_t>
      chosen;
  const auto key = std::make_tuple(handle, key_of(p, k_over_rows), table_enabled(), heuristic_sms(),
                                   p.bias != nullptr, p.residual != nullptr);
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key);
  if (it == chosen.end()) it = chosen.emplace(key, choose_algo(handle, p, k_over_rows)).first;
  return it->second;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

GemmAlgoSources batch_invariant_algo_sources() { return g_sources; }

void matmul_batch_invariant(const KView& out, const KView& a, const KView& b,
                            const MatmulEpilogue& epilogue, const BatchInvariantGemm& opt,
                            StreamHandle stream) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch * m * n == 0) return;
  check_epilogue(epilogue, out, k, kOp);
  if (epilogue.a_row_sums.data)
    kernel_fail(kOp, "the batch-invariant algorithm has no row-sum epilogue (cuBLASLt's BGRADB "
                     "sums in an order of its own)");
  const KView& bias = epilogue.bias;
  if (k == 0) {
    if (bias.data) return copy(out, bias_rows(bias, out), stream);
    return fill(out, 0.0, stream);
  }
  Problem p{};
  if (!lt_problem(out, a, b, epilogue, opt.precision, kOp, &p))
    kernel_fail(kOp, "operands need one unit-stride dimension (core makes them contiguous)");
  // Rows kept apart need a's rows and out's rows as rows: a transposed a would put M into the
  // leading dimension, which the algorithm is chosen from.
  if (!opt.k_over_rows && (p.op_b != CUBLAS_OP_N || (m > 1 && a.strides[1] != k)))
    kernel_fail(kOp, "a must be row-major with rows of length K (core makes it contiguous)");
  if (!aligned16(a.data) || !aligned16(b.data) || !aligned16(out.data))
    kernel_fail(kOp, "operands must be 16-byte aligned (core copies them)");
  CublasLtState& s = cublaslt_state();
  const cublasLtMatmulAlgo_t algo = pinned_algo(s.handle, p, opt.k_over_rows);
  // Launched as if on the simulated device's SMs, where one is set: cuBLASLt's persistent kernels
  // size their grids by it, and the bits must not follow.
  Descriptors d(p, simulated_device().sm_count);
  const float alpha = 1.f, beta = p.beta();
  const cublasStatus_t st =
      cublasLtMatmul(s.handle, d.desc, &alpha, b.data, d.a, a.data, d.b, &beta, p.c(out), d.c,
                     out.data, d.c, &algo, s.workspace, kWorkspaceBytes, as_stream(stream));
  if (st != CUBLAS_STATUS_SUCCESS)
    kernel_fail(kOp, "the pinned cuBLASLt algorithm refused " + shape_text(p) + " (status " +
                         std::to_string(int(st)) + ")");
}

}  // namespace bg::cuda
