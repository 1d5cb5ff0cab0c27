kernel "k" {
  cuda { source = "@P@/src/k.c", targets = { "sm_90" },
         launch = { block = { 128, 1, 1 }, grid = { "rows", 1, 1 }, shared = 240 * 1024,
                    params = { "x:ptr", "rows:i64" } } },
}
