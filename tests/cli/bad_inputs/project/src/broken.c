/* Does not compile: the compiler's own message must reach the user. */
int broken( { return 0; }
