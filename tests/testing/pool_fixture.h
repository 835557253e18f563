// Pools over HTTP for end-to-end tests: the body of POST /v1/admin/pools for the 80 GB a100
// pools most tests create, and that call as the scheduler's admin (scheduler_fixture.h).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {

// {name, capacity_kind, gpu_type "a100", gpu_mem_gb 80, max_gpus, price_per_gpu_hour} (the
// price in dollars, as the API takes it, e.g. "3.60"), with the fields of `extra` added or
// replacing these, e.g. {{"gpu_type", "t4"}, {"gpu_mem_gb", 16}, {"speed", 0.25}}.
nlohmann::json PoolBody(const std::string& name, const std::string& capacity_kind,
                        const std::string& price, int max_gpus,
                        const nlohmann::json& extra = nlohmann::json::object());

// POST /v1/admin/pools with `body` as the admin. Succeeds on 200; otherwise the failure
// names the status and the response body: ASSERT_TRUE(CreatePool(sched, PoolBody(...))).
::testing::AssertionResult CreatePool(const SchedulerProcess& sched, const nlohmann::json& body);

}  // namespace frugal::testing
