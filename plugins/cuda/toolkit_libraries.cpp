// cuBLAS, cuBLASLt, cuDNN, cuFFT and NCCL through dlopen: see toolkit_libraries.h.
//
// Each forwarder below repeats the declaration in the library's header; a signature
// that disagrees with the header does not compile (one C function cannot have two).
// A function the plugin starts calling must be added here, or the link fails with
// --no-undefined.
#include "toolkit_libraries.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>
#include <cufft.h>
#include <dlfcn.h>
#if KILN_CUDA_NCCL
#include <nccl.h>
#endif

#include <mutex>
#include <string>

#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

#define KILN_STRINGIFY_(x) #x
#define KILN_STRINGIFY(x) KILN_STRINGIFY_(x)

struct Library {
  const char* label;   // for messages
  const char* soname;  // what dlopen is asked for: the major version the plugin was built with
  std::once_flag once;
  void* handle = nullptr;
  std::string error;  // dlerror()'s text when it could not be opened
};

Library libraries[] = {
    {"cuBLAS", "libcublas.so." KILN_STRINGIFY(CUBLAS_VER_MAJOR), {}, nullptr, {}},
    {"cuBLASLt", "libcublasLt.so." KILN_STRINGIFY(CUBLAS_VER_MAJOR), {}, nullptr, {}},
    {"cuDNN", "libcudnn.so." KILN_STRINGIFY(CUDNN_MAJOR), {}, nullptr, {}},
#if KILN_CUDA_NCCL
    {"NCCL", "libnccl.so." KILN_STRINGIFY(NCCL_MAJOR), {}, nullptr, {}},
#else
    {"NCCL", "libnccl.so.2", {}, nullptr, {}},  // never opened: built without nccl.h
#endif
    {"cuFFT", "libcufft.so." KILN_STRINGIFY(CUFFT_VER_MAJOR), {}, nullptr, {}},
};

Library& open_library(ToolkitLibrary which) {
  Library& lib = libraries[static_cast<int>(which)];
  std::call_once(lib.once, [&] {
    // RTLD_LOCAL: the library's symbols stay out of the process's global namespace, so
    // an application that links another version of it is not disturbed.
    lib.handle = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
    if (lib.handle == nullptr) {
      const char* why = dlerror();
      lib.error = why != nullptr ? why : "unknown dlopen error";
    }
  });
  return lib;
}

// The library's function `name`, or nullptr when the library (or the function) is
// missing; the forwarder then returns the library's "not initialized" status.
void* resolve(ToolkitLibrary which, const char* name) {
  Library& lib = open_library(which);
  return lib.handle != nullptr ? dlsym(lib.handle, name) : nullptr;
}

template <class Status>
Status unavailable();
template <>
cublasStatus_t unavailable<cublasStatus_t>() {
  return CUBLAS_STATUS_NOT_INITIALIZED;
}
template <>
cudnnStatus_t unavailable<cudnnStatus_t>() {
  return CUDNN_STATUS_NOT_INITIALIZED;
}
#if KILN_CUDA_NCCL
template <>
ncclResult_t unavailable<ncclResult_t>() {
  return ncclSystemError;
}
#endif
template <>
cufftResult unavailable<cufftResult>() {
  return CUFFT_SETUP_FAILED;
}
template <>
const char* unavailable<const char*>() {
  return "(the library could not be loaded)";
}

}  // namespace

void require_library(ToolkitLibrary which) {
  const Library& lib = open_library(which);
  KILN_SDK_CHECK(lib.handle != nullptr, KILN_STATUS_DEVICE_ERROR, lib.label,
                 " could not be loaded (", lib.error, "); the CUDA plugin opens ", lib.soname,
                 " from the CUDA toolkit's folder, its RUNPATH, or LD_LIBRARY_PATH");
}

}  // namespace kiln::cuda

// One forwarder: `Ret name params`, calling the real function with `args`. The pointer
// is resolved once (a function-local static), after which a call costs one indirect
// jump — as a call through the PLT would.
#define KILN_FORWARD(library, Ret, name, params, args)                                             \
  extern "C" Ret name params {                                                                     \
    using Fn = Ret(*) params;                                                                      \
    static const Fn fn =                                                                           \
        reinterpret_cast<Fn>(::kiln::cuda::resolve(::kiln::cuda::ToolkitLibrary::library, #name)); \
    if (fn == nullptr) return ::kiln::cuda::unavailable<Ret>();                                    \
    return fn args;                                                                                \
  }

// clang-format off

// -- cuBLAS ---------------------------------------------------------------------------------
KILN_FORWARD(Cublas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t* handle), (handle))
KILN_FORWARD(Cublas, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t streamId), (handle, streamId))
KILN_FORWARD(Cublas, const char*, cublasGetStatusString, (cublasStatus_t status), (status))
KILN_FORWARD(Cublas, const char*, cublasGetStatusName, (cublasStatus_t status), (status))
KILN_FORWARD(Cublas, cublasStatus_t, cublasGemmStridedBatchedEx,
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
     const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA,
     const void* B, cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C,
     cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
     cublasComputeType_t computeType, cublasGemmAlgo_t algo),
    (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta,
     C, Ctype, ldc, strideC, batchCount, computeType, algo))
KILN_FORWARD(Cublas, cublasStatus_t, cublasDgemmStridedBatched,
    (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
     const double* alpha, const double* A, int lda, long long int strideA, const double* B, int ldb,
     long long int strideB, const double* beta, double* C, int ldc, long long int strideC,
     int batchCount),
    (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,
     strideC, batchCount))

// -- cuFFT ----------------------------------------------------------------------------------
KILN_FORWARD(Cufft, cufftResult, cufftCreate, (cufftHandle* handle), (handle))
KILN_FORWARD(Cufft, cufftResult, cufftDestroy, (cufftHandle plan), (plan))
KILN_FORWARD(Cufft, cufftResult, cufftSetAutoAllocation, (cufftHandle plan, int autoAllocate), (plan, autoAllocate))
KILN_FORWARD(Cufft, cufftResult, cufftSetWorkArea, (cufftHandle plan, void* workArea), (plan, workArea))
KILN_FORWARD(Cufft, cufftResult, cufftSetStream, (cufftHandle plan, cudaStream_t stream), (plan, stream))
KILN_FORWARD(Cufft, cufftResult, cufftMakePlanMany64,
    (cufftHandle plan, int rank, long long int* n, long long int* inembed, long long int istride,
     long long int idist, long long int* onembed, long long int ostride, long long int odist,
     cufftType type, long long int batch, size_t* workSize),
    (plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, workSize))
KILN_FORWARD(Cufft, cufftResult, cufftExecC2C, (cufftHandle plan, cufftComplex* idata, cufftComplex* odata, int direction), (plan, idata, odata, direction))
KILN_FORWARD(Cufft, cufftResult, cufftExecZ2Z, (cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleComplex* odata, int direction), (plan, idata, odata, direction))
KILN_FORWARD(Cufft, cufftResult, cufftExecR2C, (cufftHandle plan, cufftReal* idata, cufftComplex* odata), (plan, idata, odata))
KILN_FORWARD(Cufft, cufftResult, cufftExecD2Z, (cufftHandle plan, cufftDoubleReal* idata, cufftDoubleComplex* odata), (plan, idata, odata))
KILN_FORWARD(Cufft, cufftResult, cufftExecC2R, (cufftHandle plan, cufftComplex* idata, cufftReal* odata), (plan, idata, odata))
KILN_FORWARD(Cufft, cufftResult, cufftExecZ2D, (cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleReal* odata), (plan, idata, odata))

// -- cuBLASLt -------------------------------------------------------------------------------
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtCreate, (cublasLtHandle_t* lightHandle), (lightHandle))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulDescCreate,
    (cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType),
    (matmulDesc, computeType, scaleType))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t matmulDesc), (matmulDesc))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulDescSetAttribute,
    (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t sizeInBytes),
    (matmulDesc, attr, buf, sizeInBytes))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatrixLayoutCreate,
    (cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
    (matLayout, type, rows, cols, ld))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t matLayout), (matLayout))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatrixLayoutSetAttribute,
    (cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr, const void* buf, size_t sizeInBytes),
    (matLayout, attr, buf, sizeInBytes))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t* pref), (pref))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
    (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t sizeInBytes),
    (pref, attr, buf, sizeInBytes))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
    (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
     cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
     cublasLtMatmulPreference_t preference, int requestedAlgoCount,
     cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount),
    (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount,
     heuristicResultsArray, returnAlgoCount))
KILN_FORWARD(CublasLt, cublasStatus_t, cublasLtMatmul,
    (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A,
     cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
     const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
     const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream),
    (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
     workspaceSizeInBytes, stream))

// -- cuDNN ----------------------------------------------------------------------------------
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnCreate, (cudnnHandle_t* handle), (handle))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
KILN_FORWARD(Cudnn, const char*, cudnnGetErrorString, (cudnnStatus_t status), (status))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t* tensorDesc), (tensorDesc))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnSetTensor4dDescriptor,
    (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int n, int c, int h, int w),
    (tensorDesc, format, dataType, n, c, h, w))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t* filterDesc), (filterDesc))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnSetFilter4dDescriptor,
    (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int k, int c, int h, int w),
    (filterDesc, dataType, format, k, c, h, w))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t* convDesc), (convDesc))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc), (convDesc))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnSetConvolution2dDescriptor,
    (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w,
     cudnnConvolutionMode_t mode, cudnnDataType_t computeType),
    (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnSetConvolutionMathType,
    (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionMathType,
    (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t* mathType), (convDesc, mathType))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnSetConvolutionGroupCount,
    (cudnnConvolutionDescriptor_t convDesc, int groupCount), (convDesc, groupCount))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnFilterDescriptor_t filterDesc,
     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t destDesc,
     const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults),
    (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
     cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes),
    (handle, xDesc, wDesc, convDesc, yDesc, algo, sizeInBytes))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnConvolutionForward,
    (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
     const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
     cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
     const cudnnTensorDescriptor_t yDesc, void* y),
    (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc, y))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc, const cudnnTensorDescriptor_t diffDesc,
     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t gradDesc,
     const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults),
    (handle, filterDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
     const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
     cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes),
    (handle, wDesc, dyDesc, convDesc, dxDesc, algo, sizeInBytes))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnConvolutionBackwardData,
    (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,
     const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
     cudnnConvolutionBwdDataAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
     const cudnnTensorDescriptor_t dxDesc, void* dx),
    (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dxDesc, dx))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnTensorDescriptor_t diffDesc,
     const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
     const int requestedAlgoCount, int* returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t* perfResults),
    (handle, srcDesc, diffDesc, convDesc, gradDesc, requestedAlgoCount, returnedAlgoCount, perfResults))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
     const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
     cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes),
    (handle, xDesc, dyDesc, convDesc, gradDesc, algo, sizeInBytes))
KILN_FORWARD(Cudnn, cudnnStatus_t, cudnnConvolutionBackwardFilter,
    (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
     const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
     cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
     const cudnnFilterDescriptor_t dwDesc, void* dw),
    (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dwDesc, dw))

// -- NCCL (collectives.cpp) ------------------------------------------------------------------
#if KILN_CUDA_NCCL
KILN_FORWARD(Nccl, ncclResult_t, ncclGetVersion, (int* version), (version))
KILN_FORWARD(Nccl, ncclResult_t, ncclGetUniqueId, (ncclUniqueId* uniqueId), (uniqueId))
KILN_FORWARD(Nccl, ncclResult_t, ncclCommInitRankConfig,
    (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),
    (comm, nranks, commId, rank, config))
KILN_FORWARD(Nccl, ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm))
KILN_FORWARD(Nccl, ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm))
KILN_FORWARD(Nccl, ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm))
KILN_FORWARD(Nccl, const char*, ncclGetErrorString, (ncclResult_t result), (result))
KILN_FORWARD(Nccl, const char*, ncclGetLastError, (ncclComm_t comm), (comm))
KILN_FORWARD(Nccl, ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError), (comm, asyncError))
KILN_FORWARD(Nccl, ncclResult_t, ncclGroupStart, (), ())
KILN_FORWARD(Nccl, ncclResult_t, ncclGroupEnd, (), ())
KILN_FORWARD(Nccl, ncclResult_t, ncclAllReduce,
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
     ncclComm_t comm, cudaStream_t stream),
    (sendbuff, recvbuff, count, datatype, op, comm, stream))
KILN_FORWARD(Nccl, ncclResult_t, ncclBroadcast,
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
     ncclComm_t comm, cudaStream_t stream),
    (sendbuff, recvbuff, count, datatype, root, comm, stream))
KILN_FORWARD(Nccl, ncclResult_t, ncclAllGather,
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
     ncclComm_t comm, cudaStream_t stream),
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))
KILN_FORWARD(Nccl, ncclResult_t, ncclReduceScatter,
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))
#endif

// clang-format on
