__attribute__((visibility("default"))) int o(int x) { return x + 1; }
