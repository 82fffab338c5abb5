#include "pelab/host/host_info.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include <ATen/Version.h>
#include <fmt/format.h>

#include "base/environment.h"
#include "pelab/base/error.h"
#include "pelab/host/blas_kernel.h"

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#define PELAB_X86 1
#endif

namespace pelab {
namespace {

#ifdef PELAB_X86
struct Registers {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Registers cpuid(unsigned leaf, unsigned subleaf = 0) {
  Registers r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
  return r;
}

// XCR0: which register states the OS saves on a context switch, and so lets a process use.
unsigned long long xgetbv0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

bool bit(unsigned value, int index) {
  return (value >> index) & 1u;
}

// Linux hands AMX's tile data to a process only on request (arch_prctl ARCH_REQ_XCOMP_PERM, as
// oneDNN makes it); a kernel that supports it lists the feature here.
bool os_offers_amx_tiles() {
#ifdef __linux__
  constexpr int kArchGetXcompSupp = 0x1021;
  constexpr int kXfeatureTileData = 18;
  unsigned long long features = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompSupp, &features) != 0) return false;
  return (features >> kXfeatureTileData) & 1u;
#else
  return false;
#endif
}

CpuFeatures read_cpu() {
  CpuFeatures cpu;
  const Registers vendor = cpuid(0);
  char name[13] = {};
  std::memcpy(name, &vendor.ebx, 4);
  std::memcpy(name + 4, &vendor.edx, 4);
  std::memcpy(name + 8, &vendor.ecx, 4);
  cpu.vendor = name;

  const Registers basic = cpuid(1);
  const unsigned base_family = (basic.eax >> 8) & 0xf;
  cpu.family =
      static_cast<int>(base_family == 0xf ? base_family + ((basic.eax >> 20) & 0xff) : base_family);
  cpu.model = static_cast<int>((basic.eax >> 4) & 0xf);
  if (base_family == 6 || base_family == 0xf)
    cpu.model += static_cast<int>((basic.eax >> 12) & 0xf0);

  if (cpuid(0x80000000).eax >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Registers part = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i, &part, 16);
    }
    cpu.model_name = brand;
    const auto first = cpu.model_name.find_first_not_of(' ');
    cpu.model_name = first == std::string::npos ? "" : cpu.model_name.substr(first);
  }

  const bool os_saves_registers = bit(basic.ecx, 27);  // OSXSAVE: XGETBV is usable
  const unsigned long long xcr0 = os_saves_registers ? xgetbv0() : 0;
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;
  const Registers extended = cpuid(0).eax >= 7 ? cpuid(7, 0) : Registers{};
  const Registers extended1 = extended.eax >= 1 ? cpuid(7, 1) : Registers{};

  cpu.avx = ymm_state && bit(basic.ecx, 28);
  cpu.fma = cpu.avx && bit(basic.ecx, 12);
  cpu.avx2 = cpu.avx && bit(extended.ebx, 5);
  cpu.avx512 = zmm_state && bit(extended.ebx, 16) && bit(extended.ebx, 17) &&
               bit(extended.ebx, 30) && bit(extended.ebx, 31);
  cpu.avx512_bf16 = cpu.avx512 && bit(extended1.eax, 5);
  cpu.amx_bf16 =
      tile_state && bit(extended.edx, 24) && bit(extended.edx, 22) && os_offers_amx_tiles();
  return cpu;
}
#else
CpuFeatures read_cpu() {
  return {};
}
#endif

// The vector kernels ATen dispatches to, by ATen's own rule (ATen/native/DispatchStub.cpp, not
// exported): ATEN_CPU_CAPABILITY when it names one, else AVX-512 (F/BW/DQ/VL with FMA), AVX2 with
// FMA, or the default kernels.
std::string aten_kernels(const CpuFeatures& cpu) {
  if (const char* forced = environment_value("ATEN_CPU_CAPABILITY")) {
    const std::string value = forced;
    if (value == "avx512") return "AVX512 (ATEN_CPU_CAPABILITY)";
    if (value == "avx2") return "AVX2 (ATEN_CPU_CAPABILITY)";
    if (value == "default") return "DEFAULT (ATEN_CPU_CAPABILITY)";
  }
  if (cpu.avx512 && cpu.fma) return "AVX512";
  if (cpu.avx2 && cpu.fma) return "AVX2";
  return "DEFAULT";
}

std::string vector_class(int rank) {
  switch (rank) {
    case 4:
      return "AVX-512";
    case 3:
      return "AVX2";
    case 2:
      return "AVX";
    default:
      return "SSE";
  }
}

using StringFunction = char* (*)();
using IntFunction = int (*)();

template <typename Function>
Function blas_symbol(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

std::string CpuFeatures::isa_text() const {
  std::vector<std::string> parts;
  if (avx2) parts.emplace_back("AVX2");
  if (fma) parts.emplace_back("FMA");
  if (avx512) parts.emplace_back("AVX-512");
  if (avx512_bf16) parts.emplace_back("AVX512-BF16");
  parts.emplace_back(amx_bf16 ? "AMX-BF16" : "no AMX");
  if (!avx2 && avx) parts.insert(parts.begin(), "AVX");
  if (!avx) parts.insert(parts.begin(), "SSE only");
  return fmt::format("{}", fmt::join(parts, ", "));
}

int CpuFeatures::vector_rank() const {
  if (avx512 && fma) return 4;
  if (avx2 && fma) return 3;
  if (avx) return 2;
  return 1;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures cpu = read_cpu();
  return cpu;
}

std::string BlasInfo::text() const {
  if (library == "MKL")
    return fmt::format("Intel MKL {}, linked into LibTorch (it chooses its own kernels)",
                       version.empty() ? "(version unknown)" : version);
  if (!is_openblas)
    return library.empty() ? "not OpenBLAS (no kernel to report)"
                           : fmt::format("{} (not OpenBLAS: no kernel to report)", library);
  std::string choice_text;
  switch (choice) {
    case BlasKernelChoice::kDetected:
      choice_text = "OpenBLAS's choice";
      break;
    case BlasKernelChoice::kEnvironment:
      choice_text = "set by OPENBLAS_CORETYPE";
      break;
    case BlasKernelChoice::kPelab:
      choice_text = fmt::format("pelab's choice: OpenBLAS chose {}", replaced);
      break;
  }
  return fmt::format("OpenBLAS {}, kernel {} ({}), {} thread{}", version, kernel, choice_text,
                     threads, threads == 1 ? "" : "s");
}

namespace {

// What LibTorch's build configuration (at::show_config) says of its BLAS: "MKL" with the
// version, or BLAS_INFO's value.
void read_libtorch_blas(BlasInfo& blas) {
  const std::string config = at::show_config();
  const std::size_t info = config.find("BLAS_INFO=");
  if (info != std::string::npos) {
    const std::size_t begin = info + std::strlen("BLAS_INFO=");
    blas.library = config.substr(begin, config.find_first_of(", \n", begin) - begin);
  }
  if (blas.library != "mkl") return;
  blas.library = "MKL";
  const std::string marker = "Math Kernel Library Version ";
  const std::size_t at = config.find(marker);
  if (at != std::string::npos) {
    const std::size_t begin = at + marker.size();
    blas.version = config.substr(begin, config.find_first_of("- \n", begin) - begin);
  }
}

}  // namespace

BlasInfo blas_info() {
  BlasInfo blas;
  const auto corename = blas_symbol<StringFunction>("openblas_get_corename");
  const auto config = blas_symbol<StringFunction>("openblas_get_config");
  const auto threads = blas_symbol<IntFunction>("openblas_get_num_threads");
  if (corename == nullptr || config == nullptr) {
    read_libtorch_blas(blas);
    return blas;
  }
  blas.is_openblas = true;
  blas.library = "OpenBLAS";
  blas.kernel = corename();
  blas.config = config();
  std::istringstream words(blas.config);
  std::string library;
  words >> library >> blas.version;
  blas.threads = threads != nullptr ? threads() : 0;
  // An OpenMP build runs as many threads as OpenMP allows at the call (what torch::set_num_threads
  // sets), whatever its own count still says until its next threaded call.
  const auto omp_threads = blas_symbol<IntFunction>("omp_get_max_threads");
  if (blas.config.find("USE_OPENMP") != std::string::npos && omp_threads != nullptr)
    blas.threads = omp_threads();
  if (environment_value("OPENBLAS_CORETYPE") != nullptr) {
    const char* replaced = environment_value(kBlasReplacedVariable);
    blas.choice = replaced != nullptr ? BlasKernelChoice::kPelab : BlasKernelChoice::kEnvironment;
    if (replaced != nullptr) blas.replaced = replaced;
  }
  return blas;
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<double>(pages) * page_size : 0.0;
}

std::string format_bytes(double bytes) {
  if (bytes >= 1e12) return fmt::format("{:.1f} TB", bytes / 1e12);
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.0f} MB", bytes / 1e6);
  return fmt::format("{:.0f} kB", bytes / 1e3);
}

void check_fits_in_memory(double bytes, const std::string& what, const std::string& detail,
                          const std::string& remedy) {
  const double memory = physical_memory_bytes();
  if (memory <= 0 || bytes <= memory) return;
  throw Error(fmt::format("{} needs {} for {}; this machine has {} of memory. {}", what,
                          format_bytes(bytes), detail, format_bytes(memory), remedy));
}

bool cpu_has_native_bf16() {
  const CpuFeatures& cpu = cpu_features();
  return cpu.avx512_bf16 || cpu.amx_bf16;
}

HostInfo host_info() {
  HostInfo host;
  host.cpu = cpu_features();
  host.blas = blas_info();
  host.aten_kernels = aten_kernels(host.cpu);
  host.bf16_native = cpu_has_native_bf16();
  const std::string cpu_class = vector_class(host.cpu.vector_rank());
  if (!host.blas.is_openblas && host.blas.library != "MKL") {
    host.warnings.push_back(
        "LibTorch's BLAS is not OpenBLAS: pelab cannot tell its kernel. Debian's reference BLAS "
        "is about 40x slower: install libopenblas0-openmp (docs/performance.md)");
  } else if (const auto better = better_blas_kernel(host.cpu, host.blas.kernel)) {
    const bool set_by_user = host.blas.choice == BlasKernelChoice::kEnvironment;
    host.warnings.push_back(fmt::format(
        "BLAS kernel {} on an {} CPU: matrix products about 3-10x slower than with {}. {}",
        host.blas.kernel, cpu_class, *better,
        set_by_user ? "OPENBLAS_CORETYPE set it, and pelab keeps what you set"
        : environment_value(kBlasKernelSwitch) != nullptr
            ? fmt::format("{}={} keeps it", kBlasKernelSwitch, environment_value(kBlasKernelSwitch))
            : fmt::format("pelab run, probe, bench and doctor use {} instead (docs/performance.md)",
                          *better)));
  }
  if (!host.bf16_native) {
    host.warnings.push_back(
        "bf16 is emulated on this CPU (no AVX512-BF16, no AMX): train.precision = \"bf16\" runs "
        "slower than fp32 here");
  }
  return host;
}

std::string host_report(const HostInfo& host) {
  std::string out;
  const CpuFeatures& cpu = host.cpu;
  out += fmt::format("cpu:   {} ({} family {} model {}): {}\n",
                     cpu.model_name.empty() ? "unknown" : cpu.model_name, cpu.vendor, cpu.family,
                     cpu.model, cpu.isa_text());
  out += fmt::format("blas:  {}\n", host.blas.text());
  out += fmt::format("aten:  {} kernels\n", host.aten_kernels);
  out += fmt::format("bf16:  {}\n", host.bf16_native ? "native (oneDNN)" : "emulated");
  for (const std::string& warning : host.warnings)
    out += fmt::format("warning: {}\n", warning);
  if (host.warnings.empty()) out += "verdict: the BLAS kernel and ATen's kernels fit this CPU\n";
  return out;
}

std::string host_line(const HostInfo& host) {
  return fmt::format("cpu {} ({}); blas {}; aten {}; bf16 {}",
                     host.cpu.model_name.empty() ? "unknown" : host.cpu.model_name,
                     host.cpu.isa_text(), host.blas.text(), host.aten_kernels,
                     host.bf16_native ? "native" : "emulated");
}

}  // namespace pelab
