kernel "k" {
  params = { bits = { 4, 8 }, page = { 64, "pages" } },
  cuda { source = "@P@/src/k.c", targets = { "sm_80" },
         launch = { block = { 256, 1, 1 }, grid = { "rows / {page}", 1, 1 }, shared = 0,
                    params = { "x:ptr", "rows:i64", "n:i64" } } },
}
