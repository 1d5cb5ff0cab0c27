kernel "k" {
  params = { page = { 16, 64 } },
  cuda { source = "@P@/src/k.c", targets = { "sm_80" },
         launch = { block = { 256, 1, 1 }, grid = { "rows * {pages}", 1, 1 }, shared = 0,
                    params = { "x:ptr", "rows:i64", "n:i64" } } },
}
