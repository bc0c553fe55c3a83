// The CPU a benchmark ran on, as CPUID names it. A result is only comparable with others from the
// same core design, and a VM's name hides it: a Zen 5 (two 512-bit FMA pipes) and a Zen 4
// (AVX-512 on 256-bit pipes) both call themselves "AMD EPYC", their FMA peaks 2x apart
// (bench/RESULTS.md). Family and model tell them apart.
#pragma once

#include <string>

namespace tapegrad::bench {

struct HostCpu {
  std::string vendor;  // "AuthenticAMD", "GenuineIntel"; empty off x86
  std::string brand;   // the processor brand string, spaces trimmed; empty when CPUID has none
  int family = 0;      // display family and model: base plus extended fields, as the vendors'
  int model = 0;       // manuals combine them (AMD EPYC Zen 4: family 25 model 17)
};

HostCpu host_cpu();

}  // namespace tapegrad::bench
