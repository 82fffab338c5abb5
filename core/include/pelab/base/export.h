#pragma once

// Plugins are built with hidden visibility; the core's public types must stay visible so that
// their type information is shared across the library boundary (dynamic_cast, exceptions).
#define PELAB_API __attribute__((visibility("default")))
