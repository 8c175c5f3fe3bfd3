// The tuning DB: record format, bad lines, atomic merges, two processes writing at once.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "common/temp_dir.hpp"
#include "dnngraph/version.hpp"
#include "planning/tuning_db.hpp"

namespace dg = dnngraph;

namespace {

std::string fresh_dir() { return test_files::fresh_dir("dg_tuning"); }

dg::TuningRecord make_record(uint64_t fp, std::string nodes, std::string engine, double seconds) {
  dg::TuningRecord r;
  r.fingerprint = fp;
  r.nodes = std::move(nodes);
  r.device = "cpu:Test CPU @ 3.0GHz";
  r.library_version = dg::kVersionString;
  r.engine = std::move(engine);
  r.knobs = {{"tile_m", 64}, {"split_k", 2}};
  r.seconds = seconds;
  return r;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(TuningDb, LineRoundTrips) {
  auto r = make_record(0x0123456789abcdefULL, "0,1,2", "cpu_gemm_packed", 1.25e-4);
  r.device = "cpu:has\ta tab";  // tabs inside fields become spaces
  const std::string line = dg::TuningDb::format_line(r);
  dg::TuningRecord back;
  std::string why;
  ASSERT_TRUE(dg::TuningDb::parse_line(line, back, why)) << why;
  EXPECT_EQ(back.fingerprint, r.fingerprint);
  EXPECT_EQ(back.nodes, "0,1,2");
  EXPECT_EQ(back.device, "cpu:has a tab");
  EXPECT_EQ(back.engine, "cpu_gemm_packed");
  EXPECT_EQ(back.knobs, r.knobs);
  EXPECT_NEAR(back.seconds, 1.25e-4, 1e-9);
}

TEST(TuningDb, ParseRejectsDamage) {
  const std::string line = dg::TuningDb::format_line(make_record(7, "3", "ref", 0.5));
  dg::TuningRecord r;
  std::string why;
  std::string flipped = line;
  flipped[line.find("ref")] = 'x';  // any edit breaks the checksum
  EXPECT_FALSE(dg::TuningDb::parse_line(flipped, r, why));
  EXPECT_EQ(why, "checksum mismatch");
  EXPECT_FALSE(dg::TuningDb::parse_line(line.substr(0, line.size() / 2), r, why));
  EXPECT_NE(why.find("tab-separated fields"), std::string::npos) << why;
  EXPECT_FALSE(dg::TuningDb::parse_line("", r, why));
  dg::Knobs k;
  EXPECT_TRUE(dg::parse_knobs("a=1,b=-2", k));
  EXPECT_EQ(k, (dg::Knobs{{"a", 1}, {"b", -2}}));
  EXPECT_TRUE(dg::parse_knobs("-", k));
  EXPECT_TRUE(k.empty());
  EXPECT_FALSE(dg::parse_knobs("a=1,a=2", k));
  EXPECT_FALSE(dg::parse_knobs("a=", k));
  EXPECT_FALSE(dg::parse_knobs("=3", k));
  EXPECT_FALSE(dg::parse_knobs("a=1x", k));
}

TEST(TuningDb, StoreMergesAndReplacesByKey) {
  const std::string path = fresh_dir() + "/sub/tuning.db";  // folders are created
  dg::TuningDb db(path);
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.store({make_record(1, "0", "a", 3.0), make_record(2, "0", "b", 2.0)}, warnings).ok());
  ASSERT_TRUE(db.store({make_record(1, "0", "c", 1.0), make_record(1, "1", "d", 4.0)}, warnings).ok());
  std::vector<dg::TuningRecord> records;
  ASSERT_TRUE(db.load(records, warnings).ok());
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(records.size(), 3u);
  auto hit = db.find(1, "0", "cpu:Test CPU @ 3.0GHz", warnings);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->engine, "c");  // the later record replaced the first
  EXPECT_FALSE(db.find(1, "0", "cuda:sm_90:NVIDIA H200", warnings).has_value());
  EXPECT_FALSE(db.find(3, "0", "cpu:Test CPU @ 3.0GHz", warnings).has_value());
  // No temp files are left beside it.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    files += e.path().filename().string().find(".tmp.") == std::string::npos ? 1 : 100;
  EXPECT_EQ(files, 2);  // tuning.db and tuning.db.lock
}

TEST(TuningDb, BadAndForeignLinesAreSkippedWithWarnings) {
  const std::string path = fresh_dir() + "/tuning.db";
  auto other = make_record(5, "0", "ref", 1.0);
  other.library_version = "0.0.1";
  {
    std::ofstream out(path);
    out << "# comment\n"
        << dg::TuningDb::format_line(make_record(4, "0", "ref", 1.0)) << "\n"
        << "garbage that is not a record\n"
        << dg::TuningDb::format_line(other) << "\n";
    std::string damaged = dg::TuningDb::format_line(make_record(6, "0", "ref", 1.0));
    damaged[damaged.size() - 1] ^= 1;
    out << damaged << "\n";
  }
  dg::TuningDb db(path);
  std::vector<dg::TuningRecord> records;
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.load(records, warnings).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].fingerprint, 4u);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[0].find(path + ":3: skipped a corrupt line"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find(":4: skipped a record of dnngraph 0.0.1"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find(":5: skipped a corrupt line: checksum mismatch"), std::string::npos) << warnings[2];
  // Rewriting keeps the other version's record and drops the corrupt lines.
  warnings.clear();
  ASSERT_TRUE(db.store({make_record(7, "0", "ref", 1.0)}, warnings).ok());
  const std::string text = read_text(path);
  EXPECT_NE(text.find(dg::TuningDb::format_line(other)), std::string::npos);
  EXPECT_EQ(text.find("garbage"), std::string::npos);
  warnings.clear();
  ASSERT_TRUE(db.load(records, warnings).ok());
  EXPECT_EQ(records.size(), 2u);
  EXPECT_EQ(warnings.size(), 1u);  // only the foreign version remains to warn about
}

TEST(TuningDb, MissingFileIsEmptyAndDefaultPathFollowsEnvironment) {
  const std::string dir = fresh_dir();
  dg::TuningDb db(dir + "/absent.db");
  std::vector<dg::TuningRecord> records;
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.load(records, warnings).ok());
  EXPECT_TRUE(records.empty());
  ::setenv("DNNGRAPH_CACHE_DIR", dir.c_str(), 1);
  ::unsetenv("DNNGRAPH_TUNING_DB");
  EXPECT_EQ(dg::TuningDb::default_path(), dir + "/tuning.db");
  ::setenv("DNNGRAPH_TUNING_DB", (dir + "/x.db").c_str(), 1);
  EXPECT_EQ(dg::TuningDb::default_path(), dir + "/x.db");
  ::unsetenv("DNNGRAPH_TUNING_DB");
  ::unsetenv("DNNGRAPH_CACHE_DIR");
}

// Two processes store records one by one into the same file at the same time: none is lost, and
// the file stays well-formed throughout.
TEST(TuningDb, TwoProcessesLoseNoRecord) {
  const std::string path = fresh_dir() + "/tuning.db";
  constexpr int kPerProcess = 40;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      char byte;
      if (read(go[0], &byte, 1) != 1) _exit(3);  // start together
      dg::TuningDb db(path);
      for (int i = 0; i < kPerProcess; ++i) {
        std::vector<std::string> warnings;
        auto r = make_record(static_cast<uint64_t>(c * 1000 + i), "0", "engine_" + std::to_string(c), 1e-3 * i);
        if (!db.store({r}, warnings).ok() || !warnings.empty()) _exit(1);
      }
      _exit(0);
    }
  }
  ASSERT_EQ(write(go[1], "gg", 2), 2);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  close(go[0]);
  close(go[1]);
  std::vector<dg::TuningRecord> records;
  std::vector<std::string> warnings;
  ASSERT_TRUE(dg::TuningDb(path).load(records, warnings).ok());
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(records.size(), 2u * kPerProcess);
}

// ---- damaged files are kept, files that are no DB are left alone, unwritable paths fail

TEST(TuningDb, StoreKeepsADamagedFileAsideBeforeRewritingIt) {
  const std::string path = fresh_dir() + "/tuning.db";
  dg::TuningDb db(path);
  std::vector<std::string> warnings;
  ASSERT_TRUE(db.store({make_record(1, "0", "a", 1.0)}, warnings).ok());
  std::ofstream(path, std::ios::app) << "dgtune1\ttruncated\n";
  const std::string damaged = read_text(path);
  ASSERT_TRUE(db.store({make_record(2, "0", "b", 2.0)}, warnings).ok());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find(path + ":3: skipped a corrupt line: expected 9 tab-separated fields, found 2"),
            std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find(path + ": 1 damaged line(s), the first at line 3: expected 9"), std::string::npos)
      << warnings[1];
  std::vector<std::string> copies;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    if (e.path().filename().string().starts_with("tuning.db.damaged-")) copies.push_back(e.path().string());
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(read_text(copies[0]), damaged);  // every byte of the damaged file, as it was
  EXPECT_NE(warnings[1].find("the file was kept as " + copies[0] + " and rewritten with its 1 intact record(s)"),
            std::string::npos) << warnings[1];
  std::vector<dg::TuningRecord> records;
  warnings.clear();
  ASSERT_TRUE(db.load(records, warnings).ok());
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(records.size(), 2u);
}

TEST(TuningDb, StoreLeavesAFileThatIsNoTuningDbUntouched) {
  const std::string dir = fresh_dir();
  const std::pair<std::string, std::string> files[] = {
      {"export PATH=/opt/bin:$PATH\n", "(line 1: expected 9 tab-separated fields, found 1)"},
      {"# only a comment\n", "(no header and no record)"},
  };
  for (const auto& [text, why] : files) {
    const std::string path = dir + "/not_a_db";
    std::ofstream(path) << text;
    std::vector<std::string> warnings;
    const dg::Status s = dg::TuningDb(path).store({make_record(1, "0", "a", 1.0)}, warnings);
    EXPECT_EQ(s.code(), dg::ErrorCode::IO_ERROR);
    EXPECT_NE(s.message().find(path + " is not a dnngraph tuning DB " + why + "; it was left untouched"),
              std::string::npos) << s.message();
    EXPECT_EQ(read_text(path), text);
  }
  // An empty file is an empty DB.
  std::ofstream(dir + "/empty").close();
  std::vector<std::string> warnings;
  EXPECT_TRUE(dg::TuningDb(dir + "/empty").store({make_record(1, "0", "a", 1.0)}, warnings).ok());
}

TEST(TuningDb, StoreFailsWhereThePathCannotBeWritten) {
  const std::string file = fresh_dir() + "/a_file";
  std::ofstream(file) << "x\n";
  std::vector<std::string> warnings;
  const dg::Status s = dg::TuningDb(file + "/tuning.db").store({make_record(1, "0", "a", 1.0)}, warnings);
  EXPECT_EQ(s.code(), dg::ErrorCode::IO_ERROR);
  EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
}
