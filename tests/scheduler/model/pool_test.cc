// Registration's GPU check of a node against its pool (decision 0021), as a pure function.
#include <gtest/gtest.h>

#include "scheduler/model/pool.h"

namespace frugal::model {
namespace {

Pool MakePool(const std::string& type, int mem_gb) {
  Pool p;
  p.name = "a100-spot";
  p.gpu_type = type;
  p.gpu_mem_gb = mem_gb;
  return p;
}

Node MakeNode(const std::string& type, int mem_gb) {
  Node n;
  n.name = "n1";
  n.gpu_type = type;
  n.gpu_mem_gb = mem_gb;
  return n;
}

TEST(CheckNodeFitsPoolTest, RefusesAnotherGpuNamingBothSides) {
  const Status st = CheckNodeFitsPool(MakeNode("T4", 16), MakePool("A100", 80));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.field(), "gpu_type");
  EXPECT_NE(st.message().find("node gpu T4 16 GB does not match pool a100-spot (A100, 80 GB)"),
            std::string::npos)
      << st.message();
}

TEST(CheckNodeFitsPoolTest, TypeIgnoresCaseAndMemoryAllowsTenPercent) {
  // nvidia-smi's "a100" is the pool's "A100"; 80 GB +- 8 GB passes, 9 GB off does not.
  EXPECT_TRUE(CheckNodeFitsPool(MakeNode("a100", 80), MakePool("A100", 80)).ok());
  EXPECT_TRUE(CheckNodeFitsPool(MakeNode("a100", 72), MakePool("A100", 80)).ok());
  EXPECT_TRUE(CheckNodeFitsPool(MakeNode("a100", 88), MakePool("A100", 80)).ok());
  EXPECT_EQ(CheckNodeFitsPool(MakeNode("a100", 71), MakePool("A100", 80)).field(), "gpu_mem_gb");
  EXPECT_EQ(CheckNodeFitsPool(MakeNode("a100", 40), MakePool("A100", 80)).field(), "gpu_mem_gb");
  // A T4 reports 15 GB of its 16: 10 x 1 <= 16.
  EXPECT_TRUE(CheckNodeFitsPool(MakeNode("t4", 15), MakePool("t4", 16)).ok());
}

TEST(CheckNodeFitsPoolTest, APoolWithoutTypeOrMemoryAcceptsAny) {
  EXPECT_TRUE(CheckNodeFitsPool(MakeNode("T4", 16), MakePool("", 0)).ok());
  EXPECT_TRUE(CheckNodeFitsPool(MakeNode("T4", 16), MakePool("t4", 0)).ok());
  EXPECT_EQ(CheckNodeFitsPool(MakeNode("T4", 16), MakePool("", 80)).field(), "gpu_mem_gb");
}

}  // namespace
}  // namespace frugal::model
