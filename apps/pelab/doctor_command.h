#pragma once

#include "command.h"

namespace pelab::cli {

/// `pelab doctor`: what this machine computes with (the CPU's instruction sets, the BLAS kernel
/// and who chose it, ATen's kernels, bf16), a check of the BLAS against a double-precision
/// reference, and the matrix rate it reaches, in fp32 and bf16: the numbers to compare with what a
/// run achieves. The exit status is 1 when the check fails.
class DoctorCommand : public Command {
 public:
  explicit DoctorCommand(CLI::App& app);
  bool computes() const override { return true; }
  int execute() override;

 private:
  int threads_ = 1;
};

}  // namespace pelab::cli
