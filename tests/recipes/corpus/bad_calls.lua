kernel(nil)
kernel "k" (42)
kernel "j" { 1, 2, 3 }
