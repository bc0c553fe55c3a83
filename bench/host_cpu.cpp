#include "host_cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstring>

namespace tapegrad::bench {

HostCpu host_cpu() {
  HostCpu cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return cpu;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  cpu.vendor = vendor;
  if (a >= 1 && __get_cpuid(1, &a, &b, &c, &d) != 0) {
    // Leaf 1 EAX: stepping [3:0], model [7:4], family [11:8], extended model [19:16], extended
    // family [27:20]. The extended family is added only to base family 15, the extended model
    // prepended only for base families 6 and 15.
    const int base_family = static_cast<int>((a >> 8) & 0xf);
    const int base_model = static_cast<int>((a >> 4) & 0xf);
    cpu.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
    cpu.model = (base_family == 0x6 || base_family == 0xf) ? (static_cast<int>((a >> 16) & 0xf) << 4) + base_model
                                                           : base_model;
  }
  // Brand string: 48 bytes from leaves 0x80000002..4, NUL-padded, often space-padded in front.
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) != 0 && a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned r[4];
      __get_cpuid(0x80000002 + leaf, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * leaf, r, sizeof r);  // EAX, EBX, ECX, EDX in order
    }
    cpu.brand = brand;
    const auto first = cpu.brand.find_first_not_of(' ');
    const auto last = cpu.brand.find_last_not_of(' ');
    cpu.brand = first == std::string::npos ? std::string() : cpu.brand.substr(first, last - first + 1);
  }
#endif
  // A hypervisor may report any bytes: keep printable ASCII so the JSON and the tables stay valid.
  for (std::string* text : {&cpu.vendor, &cpu.brand})
    for (char& ch : *text)
      if (ch < 0x20 || ch > 0x7e) ch = '?';
  return cpu;
}

}  // namespace tapegrad::bench
