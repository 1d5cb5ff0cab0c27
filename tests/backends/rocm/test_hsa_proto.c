/*
 * test_hsa_proto.c - each HSA entry point libgk declares (GK__HSA_FUNCS in
 * loader/rocm_hsa.h) has the type of the real prototype in <hsa/hsa.h>.
 * The header is read with the real types under libgk's names
 * (GK__HSA_REAL_TYPES), so any difference in return or parameter types
 * fails to compile.
 */
#include <hsa/hsa.h>

#define GK__HSA_REAL_TYPES
#include "rocm_hsa.h"

#define GK__SAME_PROTO(name, ret, params)                                     \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
                 #name " differs from <hsa/hsa.h>");
GK__HSA_FUNCS(GK__SAME_PROTO)

int gk_test_hsa_protos(void) {
#define GK__COUNT(name, ret, params) +1
  return 0 GK__HSA_FUNCS(GK__COUNT);
}
