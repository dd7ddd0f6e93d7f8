// kiln.matmul: batched GEMM through cuBLASLt (float32, TF32, float16, bfloat16) and
// cuBLAS (float64), enqueued on the launch's stream.
//
// The libraries are column-major and Kiln is row-major: y = a·b (row-major M×N) is,
// read column-major, yᵀ = bᵀ·aᵀ (N×M). So b is the library's A operand and a its B
// operand, and a row-major operand matrix is handed over as it lies ("N"), a
// transposed one (unit row stride, a contiguous column-major matrix) as "T": neither
// is copied. Anything else — arbitrary strides inside a matrix, negative strides, or
// batch dims that no single stride describes — is first packed into a contiguous copy
// in scratch memory by a small kernel. Batch broadcasting arrives as stride 0 and goes
// to the library as a batch stride of 0.
//
// cuBLASLt plans (descriptors, layouts and the heuristic's algorithm) are cached per
// (device, dtype, precision, shapes, leading dims, batch strides, pointer alignment),
// so a repeated shape costs one map lookup; the workspace comes from Launch::scratch.
// If cuBLASLt offers no algorithm, cublasGemmStridedBatchedEx does the same product.
#include <array>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "dnn_util.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/matmul.h"

namespace kiln::cuda {

namespace {

using namespace dnn;

// ---- operand layouts ---------------------------------------------------------------------

// How the library reads one row-major rows × cols operand matrix: as it lies (op N,
// column-major cols × rows) or transposed (op T, column-major rows × cols).
struct MatrixLayout {
  bool direct = false;  // false: pack it first
  bool transposed = false;
  int64_t ld = 1;
};

MatrixLayout layout_of(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  const int64_t min_rows = std::max<int64_t>(1, rows), min_cols = std::max<int64_t>(1, cols);
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= min_cols)) {
    return {true, false, rows == 1 ? min_cols : row_stride};
  }
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= min_rows)) {
    return {true, true, cols == 1 ? min_rows : col_stride};
  }
  return {false, false, min_cols};
}

// The single element stride that steps through the flattened batch dims of `t`, if
// there is one (size-1 dims are ignored; stride 0 everywhere is broadcast).
bool batch_stride_of(const TensorView& t, int batch_ndim, int64_t& stride) {
  stride = 0;
  int64_t expected = 0;
  bool first = true;
  for (int d = batch_ndim - 1; d >= 0; --d) {
    if (t.shape[d] == 1) continue;
    if (first) {
      stride = t.strides[d];
      first = false;
    } else if (t.strides[d] != expected) {
      return false;
    }
    expected = t.strides[d] * t.shape[d];
  }
  return stride >= 0;
}

// Copies a strided operand into a contiguous row-major buffer of the same shape.
template <class Unit>
__global__ void pack_kernel(const Unit* __restrict__ src, Unit* __restrict__ dst,
                            StridedIndexer<1> ix, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t off[1];
    ix.offsets(i, off);
    dst[i] = src[off[0]];
  }
}

void* pack(const TensorView& t, const Launch& l) {
  const int64_t n = t.numel();
  void* dst = l.scratch(static_cast<size_t>(n) * t.itemsize);
  const TensorView* ops[1] = {&t};
  const StridedIndexer<1> ix = make_indexer(ops);
  const unsigned grid = grid_for(n, l);
  switch (t.itemsize) {
    case 2:
      pack_kernel<<<grid, kThreads, 0, l.stream()>>>(t.ptr<const uint16_t>(),
                                                     static_cast<uint16_t*>(dst), ix, n);
      break;
    case 4:
      pack_kernel<<<grid, kThreads, 0, l.stream()>>>(t.ptr<const uint32_t>(),
                                                     static_cast<uint32_t*>(dst), ix, n);
      break;
    case 8:
      pack_kernel<<<grid, kThreads, 0, l.stream()>>>(t.ptr<const uint64_t>(),
                                                     static_cast<uint64_t*>(dst), ix, n);
      break;
    default:
      sdk::unsupported_dtype(t.dtype);
  }
  check_launch("matmul: packing an operand");
  return dst;
}

// One operand as the library will read it: pointer, op, leading dim, batch stride.
struct GemmOperand {
  const void* data = nullptr;
  bool transposed = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

GemmOperand gemm_operand(const TensorView& t, int batch_ndim, int64_t batch, const Launch& l) {
  const int nd = t.ndim;
  const int64_t rows = t.shape[nd - 2], cols = t.shape[nd - 1];
  const MatrixLayout layout = layout_of(rows, cols, t.strides[nd - 2], t.strides[nd - 1]);
  int64_t stride = 0;
  if (layout.direct && batch_stride_of(t, batch_ndim, stride)) {
    return {t.data, layout.transposed, layout.ld, batch > 1 ? stride : 0};
  }
  return {pack(t, l), false, std::max<int64_t>(1, cols), rows * cols};
}

// ---- cuBLASLt plans ----------------------------------------------------------------------

// The cuBLASLt workspace ceiling; the algorithm's actual need is what is allocated.
constexpr uint64_t kLtWorkspaceLimit = 32u << 20;

struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool has_algo = false;

  LtPlan() = default;
  LtPlan(const LtPlan&) = delete;
  LtPlan& operator=(const LtPlan&) = delete;
  ~LtPlan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// (device, dtype, tf32, transa, transb, m, n, k, lda, ldb, batch, batch strides of A
// and B, alignments of A, B and C); C's ld and batch stride follow from m and n.
using LtKey = std::array<int64_t, 16>;

// Plans live for the process (plugins are never unloaded); the map is deliberately
// never destroyed, so no cuBLASLt call runs after the CUDA runtime has shut down.
struct LtCache {
  std::mutex mutex;
  std::map<LtKey, std::shared_ptr<const LtPlan>> plans;
};
LtCache& lt_cache() {
  static LtCache* cache = new LtCache;
  return *cache;
}
constexpr size_t kMaxCachedPlans = 4096;

// The largest power of two (at most 256) that divides the address.
int64_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int64_t a = 256;
  while (a > 1 && address % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

cudaDataType_t cuda_type(kiln_dtype dtype) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32:
      return CUDA_R_32F;
    case KILN_DTYPE_FLOAT64:
      return CUDA_R_64F;
    case KILN_DTYPE_FLOAT16:
      return CUDA_R_16F;
    case KILN_DTYPE_BFLOAT16:
      return CUDA_R_16BF;
    default:
      sdk::unsupported_dtype(dtype);
  }
}

struct GemmProblem {
  kiln_dtype dtype;
  bool tf32;
  int64_t m, n, k, batch;  // the library's (column-major) m, n, k
  GemmOperand a, b;        // the library's A (m × k after op) and B (k × n after op)
  void* c;                 // m × n column-major, ld m, batch stride m·n
};

void set_layout_batch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  if (batch <= 1) return;
  const int32_t count = static_cast<int32_t>(batch);
  check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                         sizeof count),
        "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
  check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                         &stride, sizeof stride),
        "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

std::shared_ptr<const LtPlan> make_lt_plan(const GemmProblem& p, const LtKey& key,
                                           const Launch& l) {
  auto plan = std::make_shared<LtPlan>();
  const cudaDataType_t type = cuda_type(p.dtype);
  const cublasComputeType_t compute = p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t op_a = p.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  // Stored (pre-op) shapes: op N stores m × k for A; op T stores k × m.
  const uint64_t a_rows = static_cast<uint64_t>(p.a.transposed ? p.k : p.m);
  const uint64_t a_cols = static_cast<uint64_t>(p.a.transposed ? p.m : p.k);
  const uint64_t b_rows = static_cast<uint64_t>(p.b.transposed ? p.n : p.k);
  const uint64_t b_cols = static_cast<uint64_t>(p.b.transposed ? p.k : p.n);
  check(cublasLtMatrixLayoutCreate(&plan->a, type, a_rows, a_cols, p.a.ld),
        "cublasLtMatrixLayoutCreate(A)");
  check(cublasLtMatrixLayoutCreate(&plan->b, type, b_rows, b_cols, p.b.ld),
        "cublasLtMatrixLayoutCreate(B)");
  check(cublasLtMatrixLayoutCreate(&plan->c, type, static_cast<uint64_t>(p.m),
                                   static_cast<uint64_t>(p.n), p.m),
        "cublasLtMatrixLayoutCreate(C)");
  set_layout_batch(plan->a, p.batch, p.a.batch_stride);
  set_layout_batch(plan->b, p.batch, p.b.batch_stride);
  set_layout_batch(plan->c, p.batch, p.m * p.n);

  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  struct PrefGuard {
    cublasLtMatmulPreference_t p;
    ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
  } guard{pref};
  const uint64_t limit = kLtWorkspaceLimit;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
                                             sizeof limit),
        "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
  // The heuristic must only offer kernels that work at the operands' real alignment
  // (a view's byte_offset can leave a pointer 2- or 4-byte aligned).
  const uint32_t align_a = static_cast<uint32_t>(key[13]);
  const uint32_t align_b = static_cast<uint32_t>(key[14]);
  const uint32_t align_c = static_cast<uint32_t>(key[15]);
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                             &align_a, sizeof align_a),
        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_A_BYTES)");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                             &align_b, sizeof align_b),
        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_B_BYTES)");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                             &align_c, sizeof align_c),
        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_C_BYTES)");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                             &align_c, sizeof align_c),
        "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_D_BYTES)");
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      l.cublaslt(), plan->desc, plan->a, plan->b, plan->c, plan->c, pref, 1, &result, &returned);
  // No algorithm is not an error: the cuBLAS path below takes the problem instead.
  if (status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    plan->algo = result.algo;
    plan->workspace = result.workspaceSize;
    plan->has_algo = true;
  }
  return plan;
}

std::shared_ptr<const LtPlan> lt_plan(const GemmProblem& p, const Launch& l) {
  const LtKey key = {l.ordinal(),
                     p.dtype,
                     p.tf32,
                     p.a.transposed,
                     p.b.transposed,
                     p.m,
                     p.n,
                     p.k,
                     p.a.ld,
                     p.b.ld,
                     p.batch,
                     p.a.batch_stride,
                     p.b.batch_stride,
                     alignment_of(p.a.data),
                     alignment_of(p.b.data),
                     alignment_of(p.c)};
  LtCache& cache = lt_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.plans.find(key);
  if (it != cache.plans.end()) return it->second;
  if (cache.plans.size() >= kMaxCachedPlans) cache.plans.clear();  // in-flight plans stay alive
  auto plan = make_lt_plan(p, key, l);
  cache.plans.emplace(key, plan);
  return plan;
}

// ---- the products ------------------------------------------------------------------------

void gemm_cublas_ex(const GemmProblem& p, const Launch& l) {
  const cudaDataType_t type = cuda_type(p.dtype);
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute = p.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check(cublasGemmStridedBatchedEx(
            l.cublas(), p.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
            p.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(p.m),
            static_cast<int>(p.n), static_cast<int>(p.k), &alpha, p.a.data, type,
            static_cast<int>(p.a.ld), p.a.batch_stride, p.b.data, type, static_cast<int>(p.b.ld),
            p.b.batch_stride, &beta, p.c, type, static_cast<int>(p.m), p.m * p.n,
            static_cast<int>(p.batch), compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

void gemm_float(const GemmProblem& p, const Launch& l) {
  const std::shared_ptr<const LtPlan> plan = lt_plan(p, l);
  if (plan->has_algo) {
    void* workspace = plan->workspace > 0 ? l.scratch(plan->workspace) : nullptr;
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t status = cublasLtMatmul(
        l.cublaslt(), plan->desc, &alpha, p.a.data, plan->a, p.b.data, plan->b, &beta, p.c, plan->c,
        p.c, plan->c, &plan->algo, workspace, plan->workspace, l.stream());
    if (status != CUBLAS_STATUS_NOT_SUPPORTED) {
      check(status, "cublasLtMatmul");
      return;
    }
  }
  gemm_cublas_ex(p, l);
}

void gemm_double(const GemmProblem& p, const Launch& l) {
  const double alpha = 1.0, beta = 0.0;
  check(cublasDgemmStridedBatched(
            l.cublas(), p.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
            p.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(p.m),
            static_cast<int>(p.n), static_cast<int>(p.k), &alpha,
            static_cast<const double*>(p.a.data), static_cast<int>(p.a.ld), p.a.batch_stride,
            static_cast<const double*>(p.b.data), static_cast<int>(p.b.ld), p.b.batch_stride, &beta,
            static_cast<double*>(p.c), static_cast<int>(p.m), p.m * p.n, static_cast<int>(p.batch)),
        "cublasDgemmStridedBatched");
}

void matmul_impl(const OpArgs& args, const Launch& l) {
  const sdk::Matmul o = sdk::matmul_operands(args);
  const TensorView &a = o.a, &b = o.b, &y = o.y;
  const int nd = a.ndim;
  const int64_t m = o.shape.m, n = o.shape.n, k = o.shape.k, batch = o.shape.batch;
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: zeros, without asking the library about a degenerate call
    check(cudaMemsetAsync(y.data, 0, static_cast<size_t>(batch * m * n) * y.itemsize, l.stream()),
          "matmul: cudaMemsetAsync");
    return;
  }
  KILN_SDK_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && batch <= INT_MAX,
                 KILN_STATUS_UNSUPPORTED, "matrix dims or batch above INT_MAX (m ", m, ", n ", n,
                 ", k ", k, ", batch ", batch, ")");
  KILN_SDK_CHECK(is_float_dtype(a.dtype), KILN_STATUS_UNSUPPORTED, sdk::dtype_name(a.dtype),
                 " is not supported by this kernel");

  // Column-major view: yᵀ (n × m) = bᵀ (n × k) · aᵀ (k × m).
  GemmProblem p{};
  p.dtype = a.dtype;
  p.tf32 = a.dtype == KILN_DTYPE_FLOAT32 && l.allow_tf32(args);
  p.m = n;
  p.n = m;
  p.k = k;
  p.batch = batch;
  p.a = gemm_operand(b, nd - 2, batch, l);
  p.b = gemm_operand(a, nd - 2, batch, l);
  p.c = y.data;
  KILN_SDK_CHECK(p.a.ld <= INT_MAX && p.b.ld <= INT_MAX, KILN_STATUS_UNSUPPORTED,
                 "leading dimension above INT_MAX (", p.a.ld, ", ", p.b.ld, ")");
  if (a.dtype == KILN_DTYPE_FLOAT64) {
    gemm_double(p, l);
  } else {
    gemm_float(p, l);
  }
}

}  // namespace

void add_matmul_kernels(KernelList& list) {
  list.push_back(
      catalogue_entry<op::matmul>(&matmul_impl, &sdk::supports_matmul, KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cuda
