#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "parcel_centroids.h"
#include "parcel_time_series.h"
#include "test_support.h"

namespace pelab::brain {
namespace {

using testing::error_of;
using testing::ScratchDir;
using testing::write_text;

// A [time, parcels] series whose parcel p at time t is sin(0.3 t + p) + p.
ParcelTimeSeries wave_series(const std::string& source, std::int64_t time_points,
                             std::int64_t parcels) {
  ParcelTimeSeries series;
  series.source = source;
  series.time_points = time_points;
  series.parcels = parcels;
  for (std::int64_t t = 0; t < time_points; ++t)
    for (std::int64_t p = 0; p < parcels; ++p)
      series.values.push_back(static_cast<float>(std::sin(0.3 * t + p) + p));
  return series;
}

void make_constant(ParcelTimeSeries& series, std::int64_t parcel, float value) {
  for (std::int64_t t = 0; t < series.time_points; ++t)
    series.values[t * series.parcels + parcel] = value;
}

TEST(BrainParcelData, ReadsATimeSeriesCsvWithOrWithoutHeader) {
  ScratchDir dir;
  write_text(dir / "plain.csv", "1,2,3\n4,5,6.5\n\n-7,8e-1,+9\n");
  ParcelTimeSeries series = read_time_series_csv(dir / "plain.csv");
  EXPECT_EQ(series.source, dir / "plain.csv");
  EXPECT_EQ(series.time_points, 3);
  EXPECT_EQ(series.parcels, 3);
  EXPECT_EQ(series.values, (std::vector<float>{1, 2, 3, 4, 5, 6.5f, -7, 0.8f, 9}));

  write_text(dir / "header.csv", "LH_Vis_1,LH_Vis_2\r\n0.5,1.5\r\n2.5,3.5\r\n");
  series = read_time_series_csv(dir / "header.csv");
  EXPECT_EQ(series.time_points, 2);
  EXPECT_EQ(series.parcels, 2);
  EXPECT_EQ(series.values, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
}

TEST(BrainParcelData, TimeSeriesCsvErrorsNameTheFileAndLine) {
  ScratchDir dir;
  write_text(dir / "ragged.csv", "a,b,c\n1,2,3\n4,5\n");
  std::string message = error_of([&] { read_time_series_csv(dir / "ragged.csv"); });
  EXPECT_NE(message.find(dir / "ragged.csv:3: the row has 2 fields"), std::string::npos) << message;
  write_text(dir / "word.csv", "1,2\n3,x\n");
  message = error_of([&] { read_time_series_csv(dir / "word.csv"); });
  EXPECT_NE(message.find(dir / "word.csv:2: field 2 ('x') is not a number"), std::string::npos)
      << message;
  write_text(dir / "header_only.csv", "a,b\n");
  message = error_of([&] { read_time_series_csv(dir / "header_only.csv"); });
  EXPECT_NE(message.find("header_only.csv: no data rows"), std::string::npos) << message;
  message = error_of([&] { read_time_series_csv(dir / "missing.csv"); });
  EXPECT_NE(message.find("missing.csv: cannot open"), std::string::npos) << message;
}

TEST(BrainParcelData, ReadsCentroidsWithNetworksInOrderOfFirstAppearance) {
  ScratchDir dir;
  write_text(dir / "centroids.csv",
             "name,x,y,z,network\n"
             "a,-40.5,10,20,Visual\n"
             "b,40,10,20,\"Default, mode\"\n"
             "c,0,-50,30,Visual\n"
             "d,1,2,3,Motor\n");
  const ParcelCentroids centroids = read_centroids_csv(dir / "centroids.csv");
  EXPECT_EQ(centroids.parcels(), 4);
  EXPECT_EQ(centroids.xyz, (std::vector<double>{-40.5, 10, 20, 40, 10, 20, 0, -50, 30, 1, 2, 3}));
  EXPECT_EQ(centroids.network, (std::vector<std::int64_t>{0, 1, 0, 2}));
  EXPECT_EQ(centroids.network_names,
            (std::vector<std::string>{"Visual", "Default, mode", "Motor"}));

  // Written and read back; without the network column, no networks.
  write_centroids_csv(dir / "copy.csv", centroids);
  const ParcelCentroids copy = read_centroids_csv(dir / "copy.csv");
  EXPECT_EQ(copy.xyz, centroids.xyz);
  EXPECT_EQ(copy.network, centroids.network);
  EXPECT_EQ(copy.network_names, centroids.network_names);
  write_text(dir / "plain.csv", "\xEF\xBB\xBFx,y,z\n1,2,3\n");  // with a byte order mark
  EXPECT_TRUE(read_centroids_csv(dir / "plain.csv").network.empty());

  const ParcelCentroids kept = drop_parcels(centroids, {2, 0});
  EXPECT_EQ(kept.xyz, (std::vector<double>{40, 10, 20, 1, 2, 3}));
  EXPECT_EQ(kept.network, (std::vector<std::int64_t>{1, 2}));
}

TEST(BrainParcelData, CentroidCsvErrorsNameTheFileAndLine) {
  ScratchDir dir;
  write_text(dir / "no_z.csv", "x,y,network\n1,2,A\n");
  std::string message = error_of([&] { read_centroids_csv(dir / "no_z.csv"); });
  EXPECT_NE(message.find("no_z.csv:1: the header 'x,y,network' lacks a column x, y or z"),
            std::string::npos)
      << message;
  write_text(dir / "bad.csv", "x,y,z\n1,2,3\n1,nan,3\n");
  message = error_of([&] { read_centroids_csv(dir / "bad.csv"); });
  EXPECT_NE(message.find("bad.csv:3: y = 'nan' is not a finite number"), std::string::npos)
      << message;
}

TEST(BrainParcelData, ValidationChecksTheShapeAgainstTheCentroids) {
  const ParcelTimeSeries series = wave_series("sub-01.csv", 150, 30);
  ValidationOptions options;
  options.expected_parcels = 100;
  options.expected_from = "atlas_centroids.csv";
  const std::string message = error_of([&] { validate(series, options); });
  EXPECT_NE(message.find("sub-01.csv: a 150x30 [time, parcels] matrix, but atlas_centroids.csv "
                         "has 100 parcels (100x3 centroids)"),
            std::string::npos)
      << message;
  options.expected_parcels = 30;
  EXPECT_TRUE(validate(series, options).empty());
}

TEST(BrainParcelData, ValidationRejectsNonFiniteValuesNamingParcelAndTime) {
  ParcelTimeSeries series = wave_series("sub-02.csv", 20, 5);
  series.values[7 * 5 + 3] = std::numeric_limits<float>::quiet_NaN();
  series.values[9 * 5 + 1] = std::numeric_limits<float>::infinity();
  const std::string message = error_of([&] { validate(series, {}); });
  EXPECT_NE(message.find("sub-02.csv: parcel 3 is nan at time point 7 (0-based; 2 non-finite"),
            std::string::npos)
      << message;
}

TEST(BrainParcelData, ValidationRejectsTooFewTimePoints) {
  ValidationOptions options;
  options.min_time_points = 32;
  const std::string message = error_of([&] { validate(wave_series("short.csv", 20, 4), options); });
  EXPECT_NE(message.find("short.csv: 20 time points, fewer than the 32"), std::string::npos)
      << message;
}

TEST(BrainParcelData, ConstantParcelsAreAnErrorByDefault) {
  ParcelTimeSeries series = wave_series("sub-03.csv", 40, 6);
  series.parcel_ids = {11, 12, 13, 14, 15, 16};
  make_constant(series, 4, 1000.0f);
  make_constant(series, 1, 0.0f);
  const std::string message = error_of([&] { validate(series, {}); });
  EXPECT_NE(message.find("sub-03.csv: 2 parcel(s) constant over time (no signal), 0-based: "
                         "1 (label 12), 4 (label 15); drop them from the atlas, or set "
                         "constant_parcels = \"drop\""),
            std::string::npos)
      << message;
  ValidationOptions drop;
  drop.constant_parcels = ConstantParcels::kDrop;
  EXPECT_EQ(validate(series, drop), (std::vector<std::int64_t>{1, 4}));
  // Tiny variations of a large value are still constant; a real signal is not.
  series.values[4] += 1e-5f;
  EXPECT_EQ(validate(series, drop), (std::vector<std::int64_t>{1, 4}));
}

TEST(BrainParcelData, DroppingConstantParcelsTakesTheUnionOverSubjects) {
  std::vector<ParcelTimeSeries> subjects = {
      wave_series("a.csv", 30, 5), wave_series("b.csv", 30, 5), wave_series("c.csv", 30, 5)};
  make_constant(subjects[0], 1, 2.0f);
  make_constant(subjects[1], 3, 2.0f);
  make_constant(subjects[1], 1, 2.0f);
  const ParcelTimeSeries original_c = subjects[2];

  ValidationOptions options;
  EXPECT_NE(error_of([&] { validate_cohort(subjects, options); }).find("a.csv"), std::string::npos);
  options.constant_parcels = ConstantParcels::kDrop;
  const std::vector<std::int64_t> dropped = validate_cohort(subjects, options);
  EXPECT_EQ(dropped, (std::vector<std::int64_t>{1, 3}));
  for (const ParcelTimeSeries& subject : subjects) {
    EXPECT_EQ(subject.parcels, 3);
    EXPECT_EQ(subject.values.size(), 90u);
  }
  // Subject c kept its parcels 0, 2 and 4.
  for (std::int64_t t = 0; t < 30; ++t) {
    EXPECT_EQ(subjects[2].at(t, 0), original_c.at(t, 0));
    EXPECT_EQ(subjects[2].at(t, 1), original_c.at(t, 2));
    EXPECT_EQ(subjects[2].at(t, 2), original_c.at(t, 4));
  }

  std::vector<ParcelTimeSeries> mixed = {wave_series("a.csv", 30, 5), wave_series("d.csv", 30, 4)};
  EXPECT_NE(error_of([&] {
              validate_cohort(mixed, options);
            }).find("d.csv: has 4 parcels but a.csv has 5"),
            std::string::npos);
}

}  // namespace
}  // namespace pelab::brain
