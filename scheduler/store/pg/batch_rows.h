// The batch insert's source rows (decision 0024) as JSON text, written straight into one
// string: building an nlohmann object per row and dumping it was most of the scheduler's
// time in a 10,000-job batch (decision 0046).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "scheduler/store/job_store.h"

namespace frugal::store::pg {

// Appends request `req`'s row, as the batch INSERT's jsonb_to_recordset reads it, to `out`.
// A null column is left out: jsonb_to_recordset reads a missing key as NULL.
Status AppendBatchRow(std::string& out, const SubmitRequest& req, model::JobId id,
                      std::optional<std::int64_t> array_id, std::optional<int> array_index);

}  // namespace frugal::store::pg
