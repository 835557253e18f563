#include "tests/testing/store_fixture.h"

#include "common/crypto.h"
#include "scheduler/store/pg/pg_conn.h"
#include "tests/testing/test_postgres.h"

namespace frugal::testing {

void StoreTest::SetUp() {
  conninfo_ = TestPostgres::Get().NewDatabase();
  store_ = std::make_unique<store::PgStore>(conninfo_, 4);
  ASSERT_TRUE(store_->Bootstrap(Sha256Hex("admin")).ok());
  // The engine's writes are fenced by the leader term (decision 0020): the test's store
  // leads for longer than any test runs.
  auto lead = store_->TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(lead.ok() && lead->leader) << lead.status().ToString();
  auto admin = store_->Authenticate(Sha256Hex("admin"));
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  admin_ = *admin;
}

store::AttemptAuth StoreTest::AuthOf(model::AttemptId attempt) {
  auto conn = store::PgConn::Connect(conninfo_);
  if (!conn.ok()) return {};
  auto r = (*conn)->Exec("auth_of", "SELECT node_id, fence FROM attempts WHERE id = $1",
                         {std::to_string(attempt)});
  if (!r.ok() || r->rows() == 0) return {};
  return {r->Int(0, 0), r->Text(0, 1)};
}

model::NodeId StoreTest::NodeIdOf(const std::string& name) {
  auto conn = store::PgConn::Connect(conninfo_);
  if (!conn.ok()) return 0;
  auto r = (*conn)->Exec("node_id_of", "SELECT id FROM nodes WHERE name = $1", {name});
  return r.ok() && r->rows() > 0 ? r->Int(0, 0) : 0;
}

model::Pool A100Pool(const std::string& name, model::CapacityKind kind, Micros price,
                     int max_gpus) {
  model::Pool p;
  p.name = name;
  p.kind = kind;
  p.gpu_type = "a100";
  p.gpu_mem_gb = 80;
  p.max_gpus = max_gpus;
  p.price_per_gpu_hour = price;
  return p;
}

model::Node A100Node(const std::string& name, int gpus) {
  model::Node n;
  n.name = name;
  n.gpus = gpus;
  n.gpu_type = "a100";
  n.gpu_mem_gb = 80;
  return n;
}

}  // namespace frugal::testing
