// The one include of Boost.Asio. Boost 1.74's Asio under C++20 on GCC 12 uses
// std::exchange without including <utility>; include it first, here, once.
#pragma once

#include <utility>

#include <boost/asio.hpp>
