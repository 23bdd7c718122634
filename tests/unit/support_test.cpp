#include "runtime/support/blas.h"

#include <gtest/gtest.h>

namespace accel::rt::support {
namespace {

TEST(Blas, ClassifiesDebianLibraryPaths) {
  EXPECT_EQ(ClassifyBlasPath("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"),
            BlasInfo::Kind::OpenBlas);
  EXPECT_EQ(ClassifyBlasPath("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"),
            BlasInfo::Kind::NetlibReference);
  EXPECT_EQ(ClassifyBlasPath("/opt/intel/lib/libmkl_rt.so"), BlasInfo::Kind::Mkl);
  EXPECT_EQ(ClassifyBlasPath("/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3"), BlasInfo::Kind::Blis);
}

TEST(Blas, DescriptionSaysWhichAndWhetherItIsSlow) {
  BlasInfo netlib{BlasInfo::Kind::NetlibReference, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"};
  EXPECT_FALSE(netlib.optimized());
  EXPECT_NE(netlib.Describe().find("slow"), std::string::npos);
  BlasInfo none;
  EXPECT_EQ(none.Describe(), "no BLAS loaded");
}

TEST(Blas, ThisTestBinaryLoadsNoBlas) {
  // Nothing here links BLAS; detection must not invent one.
  EXPECT_EQ(DetectLoadedBlas().kind, BlasInfo::Kind::NotLoaded);
}

}  // namespace
}  // namespace accel::rt::support
