#include "pelab/model/batched_matmul.h"

#include <algorithm>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

// The Fortran BLAS that LibTorch itself calls (libblas.so.3: OpenBLAS on Debian).
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
            const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
            const float* beta, float* c, const int* ldc);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
            const double* alpha, const double* a, const int* lda, const double* b, const int* ldb,
            const double* beta, double* c, const int* ldc);
}

namespace pelab {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The strides of one matrix inside a batch of 3D [batch, rows, cols] or 4D [batch, heads, rows,
// cols] tensors, and where the matrix with flat batch index `index` starts.
struct MatrixView {
  std::int64_t heads = 1;
  std::int64_t batch_stride = 0;
  std::int64_t head_stride = 0;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 0;

  explicit MatrixView(const torch::Tensor& t) {
    const std::int64_t dims = t.dim();
    heads = dims == 4 ? t.size(1) : 1;
    batch_stride = t.stride(0);
    head_stride = dims == 4 ? t.stride(1) : 0;
    row_stride = t.stride(dims - 2);
    col_stride = t.stride(dims - 1);
  }
  std::int64_t offset(std::int64_t index) const {
    return (index / heads) * batch_stride + (index % heads) * head_stride;
  }
};

// One matrix operand as BLAS sees it: column-major, so a row-major [rows, cols] matrix is its
// transpose. 'N' when its columns are contiguous, 'T' when its rows are, otherwise packed.
template <typename T>
struct BlasOperand {
  char transpose = 'N';
  int leading_dimension = 0;
  const T* data = nullptr;

  // The row-major [rows, cols] matrix at `data` with the given strides, read as the column-major
  // [cols, rows] matrix that is its transpose.
  BlasOperand(const T* matrix, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
              std::int64_t col_stride, std::vector<T>& buffer) {
    if (col_stride == 1 && row_stride >= std::max<std::int64_t>(1, cols)) {
      transpose = 'N';
      leading_dimension = static_cast<int>(row_stride);
      data = matrix;
    } else if (row_stride == 1 && col_stride >= std::max<std::int64_t>(1, rows)) {
      transpose = 'T';
      leading_dimension = static_cast<int>(col_stride);
      data = matrix;
    } else {
      buffer.resize(static_cast<std::size_t>(rows * cols));
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c)
          buffer[r * cols + c] = matrix[r * row_stride + c * col_stride];
      }
      transpose = 'N';
      leading_dimension = static_cast<int>(std::max<std::int64_t>(1, cols));
      data = buffer.data();
    }
  }
};

void gemm(char transa, char transb, int m, int n, int k, const float* a, int lda, const float* b,
          int ldb, float* c, int ldc) {
  const float one = 1, zero = 0;
  sgemm_(&transa, &transb, &m, &n, &k, &one, a, &lda, b, &ldb, &zero, c, &ldc);
}

void gemm(char transa, char transb, int m, int n, int k, const double* a, int lda, const double* b,
          int ldb, double* c, int ldc) {
  const double one = 1, zero = 0;
  dgemm_(&transa, &transb, &m, &n, &k, &one, a, &lda, b, &ldb, &zero, c, &ldc);
}

// out[index] = a[index] · b[index] for every matrix of the batch, one BLAS call each, as ATen's
// bmm makes them (the row-major product as the column-major bᵀ·aᵀ) but without its per-matrix
// select, view and checks. Same calls, same sums: the results equal torch::matmul's.
template <typename T>
void multiply_batch(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& out) {
  const std::int64_t dims = a.dim();
  const std::int64_t m = a.size(dims - 2);
  const std::int64_t k = a.size(dims - 1);
  const std::int64_t n = b.size(dims - 1);
  const std::int64_t matrices = out.numel() / (m * n);
  const MatrixView a_view(a);
  const MatrixView b_view(b);
  const T* a_data = a.data_ptr<T>();
  const T* b_data = b.data_ptr<T>();
  T* out_data = out.data_ptr<T>();
  // ATen's grain is in elements of work; one matrix is m*k*n multiply-adds.
  const std::int64_t grain = std::max<std::int64_t>(1, at::internal::GRAIN_SIZE / (m * k * n));
  at::parallel_for(0, matrices, grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<T> a_buffer, b_buffer;
    for (std::int64_t index = begin; index < end; ++index) {
      const BlasOperand<T> left(b_data + b_view.offset(index), k, n, b_view.row_stride,
                                b_view.col_stride, b_buffer);
      const BlasOperand<T> right(a_data + a_view.offset(index), m, k, a_view.row_stride,
                                 a_view.col_stride, a_buffer);
      gemm(left.transpose, right.transpose, static_cast<int>(n), static_cast<int>(m),
           static_cast<int>(k), left.data, left.leading_dimension, right.data,
           right.leading_dimension, out_data + index * m * n, static_cast<int>(n));
    }
  });
}

bool fits_direct_kernel(const torch::Tensor& a, const torch::Tensor& b) {
  const std::int64_t dims = a.dim();
  if (dims != b.dim() || (dims != 3 && dims != 4)) return false;
  if (!a.device().is_cpu() || !b.device().is_cpu() || a.scalar_type() != b.scalar_type()) {
    return false;
  }
  if (a.scalar_type() != torch::kFloat && a.scalar_type() != torch::kDouble) return false;
  if (a.size(dims - 1) != b.size(dims - 2)) return false;  // torch::matmul says what is wrong
  for (std::int64_t d = 0; d < dims - 2; ++d) {
    if (a.size(d) != b.size(d)) return false;  // broadcasting is left to torch::matmul
  }
  const std::int64_t work = a.size(dims - 2) * a.size(dims - 1) * b.size(dims - 1);
  return work > 0 && work <= kSmallMatmulMaxWork;
}

torch::Tensor multiply_direct(const torch::Tensor& a, const torch::Tensor& b) {
  std::vector<std::int64_t> shape = a.sizes().vec();
  shape.back() = b.size(-1);
  torch::Tensor out = torch::empty(shape, a.options());
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "pelab::batched_matmul",
                             [&] { multiply_batch<scalar_t>(a, b, out); });
  return out;
}

class SmallBatchedMatmul : public torch::autograd::Function<SmallBatchedMatmul> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    ctx->save_for_backward({a, b});
    return multiply_direct(a, b);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& a = saved[0];
    const torch::Tensor& b = saved[1];
    const torch::Tensor& grad = grad_outputs[0];
    // d(a·b)/da = grad·bᵀ and d(a·b)/db = aᵀ·grad, themselves differentiable.
    torch::Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0)) grad_a = batched_matmul(grad, b.transpose(-2, -1));
    if (ctx->needs_input_grad(1)) grad_b = batched_matmul(a.transpose(-2, -1), grad);
    return {grad_a, grad_b};
  }
};

}  // namespace

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  if (!fits_direct_kernel(a, b)) return torch::matmul(a, b);
  return SmallBatchedMatmul::apply(a, b);
}

}  // namespace pelab
