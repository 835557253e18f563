#include "tests/testing/pool_fixture.h"

namespace frugal::testing {

nlohmann::json PoolBody(const std::string& name, const std::string& capacity_kind,
                        const std::string& price, int max_gpus, const nlohmann::json& extra) {
  nlohmann::json body = {{"name", name},       {"capacity_kind", capacity_kind},
                         {"gpu_type", "a100"}, {"gpu_mem_gb", 80},
                         {"max_gpus", max_gpus}, {"price_per_gpu_hour", price}};
  body.update(extra);
  return body;
}

::testing::AssertionResult CreatePool(const SchedulerProcess& sched, const nlohmann::json& body) {
  HttpResult r = sched.Call("POST", "/v1/admin/pools", sched.admin_token(), body.dump());
  if (r.status == 200) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "POST /v1/admin/pools " << body.dump() << ": " << r.status << " " << r.raw;
}

}  // namespace frugal::testing
