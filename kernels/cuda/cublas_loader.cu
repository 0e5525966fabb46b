// cublas_loader.cu: cuBLAS and cuBLASLt loaded when the first product needs them, not when the
// program starts. cuBLASLt's own initialisers take about half a second of CPU at load (its
// kernel tables), which every bitgrad process paid before its first line, `bitgrad checksum` and
// a CPU run included. The binary is not linked against either library; instead this file
// defines the entry points bitgrad calls, each resolving the real one from the library with
// dlopen/dlsym on its first call (the libraries' own names, through the binary's run path like a
// linked library: the CUDA toolkit's lib folder, then the loader's search). A missing library
// is one line naming it, at the first product on a GPU.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "../kernel_types.h"

namespace bg::cuda {
namespace {

#define BG_STR(x) #x
#define BG_XSTR(x) BG_STR(x)  // the name after cublas_v2.h's renames (cublasCreate_v2)

enum class Library { cublas, cublas_lt };

void* library_handle(Library which) {
  static std::mutex mu;
  static void* handles[2] = {nullptr, nullptr};
  const int i = int(which);
  std::lock_guard<std::mutex> lock(mu);
  if (!handles[i]) {
    const std::string name =
        std::string(which == Library::cublas ? "libcublas.so." : "libcublasLt.so.") +
        std::to_string(CUBLAS_VER_MAJOR);
    handles[i] = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handles[i]) {
      const char* why = dlerror();
      kernel_fail("matmul", "cannot load " + name + " (the CUDA toolkit's cuBLAS, version " +
                                std::to_string(CUBLAS_VER_MAJOR) +
                                "): " + std::string(why ? why : "not found"));
    }
  }
  return handles[i];
}

template <typename Fn>
Fn resolve(Library which, const char* name) {
  void* symbol = dlsym(library_handle(which), name);
  if (!symbol) kernel_fail("matmul", std::string("cuBLAS has no entry point ") + name);
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace
}  // namespace bg::cuda

using bg::cuda::Library;
using bg::cuda::resolve;

// Each shim: the entry point's own signature, forwarding to the loaded library's.
#define BG_LT(name) \
  static const auto fn = resolve<decltype(&name)>(Library::cublas_lt, BG_XSTR(name))
#define BG_BLAS(name) \
  static const auto fn = resolve<decltype(&name)>(Library::cublas, BG_XSTR(name))

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate(cublasHandle_t* handle) {
  BG_BLAS(cublasCreate);
  return fn(handle);
}

cublasStatus_t CUBLASWINAPI cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  BG_BLAS(cublasSetStream);
  return fn(handle, stream);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
    const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  // The C entry point, not the C++ overload that takes a cudaDataType compute type.
  using Fn = cublasStatus_t (*)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
      cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*,
      void*, cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const auto fn = resolve<Fn>(Library::cublas, "cublasGemmStridedBatchedEx");
  return fn(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
            beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
  BG_LT(cublasLtCreate);
  return fn(handle);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                           const void* alpha, const void* A,
                                           cublasLtMatrixLayout_t Adesc, const void* B,
                                           cublasLtMatrixLayout_t Bdesc, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspaceSizeInBytes, cudaStream_t stream) {
  BG_LT(cublasLtMatmul);
  return fn(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
            workspaceSizeInBytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  BG_LT(cublasLtMatmulDescCreate);
  return fn(desc, computeType, scaleType);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  BG_LT(cublasLtMatmulDescDestroy);
  return fn(desc);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t sizeInBytes) {
  BG_LT(cublasLtMatmulDescSetAttribute);
  return fn(desc, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  BG_LT(cublasLtMatrixLayoutCreate);
  return fn(layout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  BG_LT(cublasLtMatrixLayoutDestroy);
  return fn(layout);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void* buf, size_t sizeInBytes) {
  BG_LT(cublasLtMatrixLayoutSetAttribute);
  return fn(layout, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  BG_LT(cublasLtMatmulPreferenceCreate);
  return fn(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  BG_LT(cublasLtMatmulPreferenceDestroy);
  return fn(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t sizeInBytes) {
  BG_LT(cublasLtMatmulPreferenceSetAttribute);
  return fn(pref, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  BG_LT(cublasLtMatmulAlgoGetHeuristic);
  return fn(handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount,
            heuristicResultsArray, returnAlgoCount);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoInit(cublasLtHandle_t handle,
                                                   cublasComputeType_t computeType,
                                                   cudaDataType_t scaleType, cudaDataType_t Atype,
                                                   cudaDataType_t Btype, cudaDataType_t Ctype,
                                                   cudaDataType_t Dtype, int algoId,
                                                   cublasLtMatmulAlgo_t* algo) {
  BG_LT(cublasLtMatmulAlgoInit);
  return fn(handle, computeType, scaleType, Atype, Btype, Ctype, Dtype, algoId, algo);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigSetAttribute(
    cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, const void* buf,
    size_t sizeInBytes) {
  BG_LT(cublasLtMatmulAlgoConfigSetAttribute);
  return fn(algo, attr, buf, sizeInBytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoConfigGetAttribute(
    const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
    size_t sizeInBytes, size_t* sizeWritten) {
  BG_LT(cublasLtMatmulAlgoConfigGetAttribute);
  return fn(algo, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoCheck(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
  BG_LT(cublasLtMatmulAlgoCheck);
  return fn(handle, desc, Adesc, Bdesc, Cdesc, Ddesc, algo, result);
}

}  // extern "C"
