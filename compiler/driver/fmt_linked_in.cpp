// fmt's out-of-line functions, compiled into accelc. Debian's libfmt-dev ships no static
// archive, and the shared libfmt needs the shared libstdc++, whose symbol binding costs each
// accelc process more than checking a config does. With these definitions in the binary,
// `--as-needed` (CMakeLists.txt) leaves both libraries out. format-inl.h is fmt's own
// implementation file, the one its shared library is built from.
#include <fmt/format-inl.h>

// format.h declares these two `extern template`; the functions above use them.
FMT_BEGIN_NAMESPACE
namespace detail {
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
