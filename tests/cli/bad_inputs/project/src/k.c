#include "inc/h.h"
__attribute__((visibility("default"))) int k(int x) { return x * SCALE * BITS; }
