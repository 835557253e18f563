// A pool's settings as JSON: the fields an admin sets, named and written as the API takes
// them (money as dollars text). The API's pool (api/EncodePool) adds its id, name and what
// the store learned; the audit log and `admin apply`'s diff show exactly these, so a change
// reads like what the admin wrote.
#pragma once

#include <nlohmann/json.hpp>

#include "scheduler/model/pool.h"

namespace frugal::store {

nlohmann::json PoolSettingsJson(const model::Pool& pool);

}  // namespace frugal::store
