// Which GPU a trace's deviceProperties describe, and the vendor peaks of it: variants that share
// a name apart (H100 SXM and PCIe) are told apart, a device the table lacks gets no figures.
#include "trace/device_peaks.h"

#include <gtest/gtest.h>

#include "trace/parse.h"

namespace pil::trace {
namespace {

DeviceInfo device(const std::string& name, int sms, double memory_gb, int major, int minor) {
  DeviceInfo d;
  d.id = 0;
  d.name = name;
  d.num_sms = sms;
  d.total_global_mem = int64_t(memory_gb * 1e9);
  d.compute_major = major;
  d.compute_minor = minor;
  return d;
}

std::string matched(const DeviceInfo& d) {
  const GpuMatch m = match_gpu(d);
  return m.spec ? m.spec->name : "";
}

TEST(TraceDevicePeaks, H100SxmAndPcieDiffer) {
  // What the driver reports: 132 SMs and 79.2 GiB for the SXM5 part, 114 SMs for the PCIe card.
  const DeviceInfo sxm = device("NVIDIA H100 80GB HBM3", 132, 85.03, 9, 0);
  const DeviceInfo pcie = device("NVIDIA H100 PCIe", 114, 85.03, 9, 0);
  const GpuMatch a = match_gpu(sxm), b = match_gpu(pcie);
  ASSERT_NE(a.spec, nullptr) << a.line;
  ASSERT_NE(b.spec, nullptr) << b.line;
  EXPECT_EQ(std::string(a.spec->name), "H100 SXM5 80GB");
  EXPECT_EQ(std::string(b.spec->name), "H100 PCIe 80GB");
  EXPECT_EQ(a.spec->peak.bf16_tensor, 989.5);  // dense: half the datasheet's 1,979 with sparsity
  EXPECT_EQ(b.spec->peak.bf16_tensor, 756.5);
  EXPECT_EQ(a.spec->peak.memory_gbps, 3350);
  EXPECT_EQ(b.spec->peak.memory_gbps, 2000);
  EXPECT_NE(a.line.find("H100 SXM5 80GB"), std::string::npos) << a.line;
  EXPECT_NE(a.line.find("https://"), std::string::npos) << a.line;  // says where the figures are from
  // The SM count alone decides between them: a PCIe name with 132 SMs is neither.
  EXPECT_EQ(matched(device("NVIDIA H100 PCIe", 132, 85.03, 9, 0)), "");
}

TEST(TraceDevicePeaks, OtherVariantsByNameMemoryAndCapability) {
  EXPECT_EQ(matched(device("NVIDIA H100 NVL", 132, 100.5, 9, 0)), "H100 NVL 94GB");
  EXPECT_EQ(matched(device("NVIDIA H200", 132, 150.1, 9, 0)), "H200 SXM 141GB");
  EXPECT_EQ(matched(device("NVIDIA H200 NVL", 132, 150.1, 9, 0)), "H200 NVL 141GB");
  EXPECT_EQ(matched(device("NVIDIA A100-SXM4-80GB", 108, 85.1, 8, 0)), "A100 80GB SXM4");
  EXPECT_EQ(matched(device("NVIDIA A100 80GB PCIe", 108, 85.1, 8, 0)), "A100 80GB PCIe");
  EXPECT_EQ(matched(device("NVIDIA A100-SXM4-40GB", 108, 42.4, 8, 0)), "A100 40GB (SXM4 or PCIe)");
  EXPECT_EQ(matched(device("Tesla V100-SXM2-32GB", 80, 34.1, 7, 0)), "V100 SXM2");
  EXPECT_EQ(matched(device("Tesla V100-PCIE-16GB", 80, 16.9, 7, 0)), "");  // not in the table
  EXPECT_EQ(matched(device("NVIDIA L4", 58, 23.6, 8, 9)), "L4");
  EXPECT_EQ(matched(device("NVIDIA L40S", 142, 48.3, 8, 9)), "L40S");  // "L4" is a word, not a prefix
  EXPECT_EQ(matched(device("NVIDIA A10", 72, 23.8, 8, 6)), "A10");
  EXPECT_EQ(matched(device("NVIDIA A10G", 80, 23.8, 8, 6)), "");
  EXPECT_EQ(matched(device("Tesla T4", 40, 15.8, 7, 5)), "T4");
  // ROCm names a GCD "AMD Radeon Graphics" on some releases: its CUs, memory and gfx version tell.
  EXPECT_EQ(matched(device("AMD Instinct MI250X", 110, 68.7, 9, 0)), "MI250X (one GCD)");
  EXPECT_EQ(matched(device("AMD Radeon Graphics", 110, 68.7, 9, 0)), "MI250X (one GCD)");
  EXPECT_EQ(matched(device("AMD Instinct MI300X", 304, 205.8, 9, 4)), "MI300X");
  // An A100 80GB whose name says neither SXM4 nor PCIe (the two differ in bandwidth): none.
  EXPECT_EQ(matched(device("NVIDIA A100-PG506-207", 108, 85.1, 8, 0)), "");
}

TEST(TraceDevicePeaks, TracesDevicesMatchOrSayWhyNot) {
  // HTA's AlexNet trace: A100-PG509-200 (the 40 GB SXM4 board): the 40 GB entry. Its MI250
  // trace: 104 CUs per GCD, an MI250 (not X), which the table lacks: no figures, and the line
  // says what the trace showed.
  const std::string dir = std::string(PIL_TRACE_FIXTURES_DIR) + "/hta/";
  const Trace a100 = parse_trace_file(dir + "alexnet_two_streams.json.gz");
  ASSERT_FALSE(a100.devices.empty());
  EXPECT_EQ(matched(a100.devices[0]), "A100 40GB (SXM4 or PCIe)");
  const Trace mi250 = parse_trace_file(dir + "mi250_rocm6_2_train.json.gz");
  ASSERT_FALSE(mi250.devices.empty());
  const GpuMatch m = match_gpu(mi250.devices[0]);
  EXPECT_EQ(m.spec, nullptr);
  EXPECT_NE(m.line.find("104 SMs"), std::string::npos) << m.line;
  EXPECT_NE(m.line.find("not in the table"), std::string::npos) << m.line;
}

TEST(TraceDevicePeaks, AFieldMissingMatchesNothing) {
  DeviceInfo named_only;
  named_only.name = "NVIDIA H100 80GB HBM3";  // as the CUPTI tracer's traces name it
  const GpuMatch m = match_gpu(named_only);
  EXPECT_EQ(m.spec, nullptr);
  EXPECT_NE(m.line.find("numSms"), std::string::npos) << m.line;
}

TEST(TraceDevicePeaks, EachEntryIsFoundAsItselfAndHasItsSource) {
  // A device made from each entry's own conditions matches that entry and no other: no two
  // entries overlap. And each entry says where its figures are from.
  for (const GpuSpec& s : gpu_specs()) {
    SCOPED_TRACE(s.name);
    std::string name = s.words;
    const DeviceInfo d = device(name, s.sms, (s.min_memory_gb + s.max_memory_gb) / 2, s.compute_major, s.compute_minor);
    const GpuMatch m = match_gpu(d);
    EXPECT_EQ(m.spec, &s) << m.line;
    EXPECT_EQ(std::string(s.source).rfind("https://", 0), 0u);
    EXPECT_GT(std::string(s.table).size(), 10u);
    EXPECT_GT(s.peak.memory_gbps, 0);
    EXPECT_GT(s.peak.fp32, 0);
    EXPECT_GE(s.peak.fp16_tensor, s.peak.fp32);  // tensor cores above the vector units
  }
}

}  // namespace
}  // namespace pil::trace
