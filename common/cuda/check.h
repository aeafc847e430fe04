#pragma once
/// \file
/// Error checks for the CUDA runtime, cuBLAS, cuBLASLt and CUPTI. A failed call throws
/// pil::cuda::Error whose message names the expression, the file and line, and the library's
/// own words; the harness prints it as one line.
#include <stdexcept>
#include <string>

namespace pil::cuda {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The library has no way to do what was asked on this machine (cuBLASLt offers no algorithm
/// for an epilogue and dtype, the build lacks CUPTI): the request was fine, the machine lacks
/// it. The harness reports the variant as skipped (exit 77) with this reason, not as failed.
struct Unavailable : Error {
  using Error::Error;
};

[[noreturn]] inline void fail(const char* library, const char* expression, const char* file,
                              int line, const std::string& detail) {
  throw Error(std::string(library) + " call failed: " + expression + " at " + file + ":" +
              std::to_string(line) + ": " + detail);
}

}  // namespace pil::cuda

#define PIL_CUDA_CHECK(expr)                                                        \
  do {                                                                              \
    const cudaError_t pil_err_ = (expr);                                            \
    if (pil_err_ != cudaSuccess)                                                    \
      ::pil::cuda::fail("CUDA", #expr, __FILE__, __LINE__,                          \
                        cudaGetErrorString(pil_err_));                              \
  } while (0)

#define PIL_CUBLAS_CHECK(expr)                                                      \
  do {                                                                              \
    const cublasStatus_t pil_status_ = (expr);                                      \
    if (pil_status_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::pil::cuda::fail("cuBLAS", #expr, __FILE__, __LINE__,                        \
                        cublasGetStatusString(pil_status_));                        \
  } while (0)

#define PIL_CUPTI_CHECK(expr)                                                       \
  do {                                                                              \
    const CUptiResult pil_result_ = (expr);                                         \
    if (pil_result_ != CUPTI_SUCCESS) {                                             \
      const char* pil_text_ = "unknown CUPTI error";                                \
      cuptiGetResultString(pil_result_, &pil_text_);                                \
      ::pil::cuda::fail("CUPTI", #expr, __FILE__, __LINE__, pil_text_);             \
    }                                                                               \
  } while (0)
