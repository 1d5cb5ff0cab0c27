kernel "k" {
  cuda { source = "@P@/src/k.c", targets = { "sm_80" }, entry = { "k", "k_two" },
         launch = { block = { 256, 1, 1 }, grid = { "rows", 1, 1 }, shared = 0,
                    params = { "x:ptr", "rows:i64" },
                    k_too = { block = { 64, 1, 1 }, grid = { 1, 1, 1 }, shared = 0, params = {} } } },
}
