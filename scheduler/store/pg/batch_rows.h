// The batch insert's source rows (decisions 0024, 0046, 0059): one PostgreSQL array literal
// per column, written straight into strings, which the INSERT unnests. As one JSON document,
// PostgreSQL parsed 10,000 rows into jsonb in 42 ms when the statement was bound, before
// taking each record apart; in `psql`, reading the same rows took 117 ms from JSON and 42 ms
// from arrays, the literals' parsing included.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/store/job_store.h"

namespace frugal::store::pg {

class BatchColumns {
 public:
  // The FROM item that reads the columns as rows `r`, its arrays the parameters from
  // $`first_param` on, in Params()' order. Nested values (command, gpu_types, depends_on,
  // depends_on_any as array literals; env and labels as JSON) arrive as text for the
  // SELECT to cast per row: an array of arrays must be rectangular in PostgreSQL.
  static std::string FromItem(int first_param);

  BatchColumns();

  // Appends request `req`'s row. InvalidArgument if a string holds a NUL, which no
  // PostgreSQL text can (the API refuses it first; this keeps a NUL from cutting a
  // parameter short if another caller does not); the builder is then spent.
  Status Add(const SubmitRequest& req, model::JobId id, std::optional<std::int64_t> array_id,
             std::optional<int> array_index);

  // The columns' literals, closed; the builder is spent.
  std::vector<std::string> Params() &&;

 private:
  std::vector<std::string> cols_;
  bool empty_ = true;
};

}  // namespace frugal::store::pg
