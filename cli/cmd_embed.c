/* cmd_embed.c - gk embed: an archive as a C (or assembler) source file, so
 * that a program carries its kernels inside its own binary and opens them
 * with gk_archive_open_memory, which borrows the bytes: no copy, no file to
 * ship beside the program, nothing to go missing at run time.
 *
 * The output depends only on the archive's bytes, its file name and the
 * options (no dates, no absolute paths in the C form), so rebuilding gives
 * the same file and the same object. */
#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd.h"
#include "outfile.h"
#include "util.h"

static const char embed_usage[] =
  "usage: gk embed FILE -o OUT.c [--symbol NAME] [--array | --asm]\n"
  "\n"
  "Writes a C file defining\n"
  "    const unsigned char NAME[];   /* the archive's bytes, 8-byte aligned */\n"
  "    const size_t NAME_size;\n"
  "for a program to link and open with gk_archive_open_memory(NAME, NAME_size,\n"
  "&ar), which uses the bytes in place. Declare them in the program as\n"
  "    extern const unsigned char NAME[];\n"
  "    extern const size_t NAME_size;\n"
  "FILE must be an archive libgk can open. The output is written atomically\n"
  "and is the same for the same archive and options.\n"
  "\n"
  "  -o, --out OUT     the file to write ('-': stdout)\n"
  "  --symbol NAME     a C identifier; default: the file name with every other\n"
  "                    character turned into '_' (kernels.gkfat -> kernels_gkfat)\n"
  "  --array           spell the bytes as a brace list (0x12, ...) instead of\n"
  "                    string literals: for compilers that limit string length\n"
  "                    (MSVC); GCC and Clang read literals about 15x faster\n"
  "  --asm             write GNU assembler (OUT.S) that pulls the file in with\n"
  "                    .incbin instead of spelling every byte: fast to build for\n"
  "                    large archives; the archive must stay at its absolute\n"
  "                    path until the .S is assembled (ELF targets)\n";

typedef struct embed_args {
  const char *path, *out, *sym;
  int as, array;
} embed_args;

static const cli_option embed_opts[] = {
  CLI_VALUE("--out", "-o", "OUT", embed_args, out),
  CLI_VALUE("--symbol", NULL, "NAME", embed_args, sym),
  CLI_FLAG("--array", NULL, embed_args, array),
  CLI_FLAG("--asm", NULL, embed_args, as),
  CLI_END};
static const cli_command embed_cmd = {
  .name = "embed", .usage = embed_usage, .opts = embed_opts, CLI_ARCHIVE(embed_args)};

static void *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  size_t cap = 0, n = 0;
  if (!f) return NULL;
  errno = 0;
  for (;;) {
    if (n == cap) {
      unsigned char *more = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
      if (!more) {
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return NULL;
      }
      buf = more;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int e = errno; /* read's own reason (EISDIR for a folder), not EIO */
    free(buf);
    buf = NULL;
    errno = e ? e : EIO;
  }
  fclose(f);
  *size = n;
  return buf;
}

static int is_keyword(const char *s) {
  static const char *const kw[] = {
      "auto", "break", "case", "char", "const", "continue", "default", "do",
      "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline",
      "int", "long", "register", "restrict", "return", "short", "signed", "sizeof",
      "static", "struct", "switch", "typedef", "union", "unsigned", "void",
      "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex",
      "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local",
      "bool", "true", "false", "alignas", "alignof", "nullptr", "static_assert",
      "thread_local", "typeof", "typeof_unqual", "constexpr"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (strcmp(s, kw[i]) == 0) return 1;
  return 0;
}

/* A C identifier that is not a keyword; NAME_size must fit a linker's
 * symbol too, so the length is bounded. */
static int c_identifier(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 200 || (s[0] >= '0' && s[0] <= '9') || is_keyword(s)) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

/* kernels.gkfat -> kernels_gkfat; 2024.gkfat -> _2024_gkfat. */
static void default_symbol(const char *path, char *out, size_t size) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t n = 0;
  if (*base >= '0' && *base <= '9' && n + 1 < size) out[n++] = '_';
  for (; *base && n + 1 < size; base++)
    out[n++] = ((*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') ||
                (*base >= '0' && *base <= '9'))
                   ? *base
                   : '_';
  out[n] = '\0';
}

/* The archive's file name in a comment: '*' and '/' could end it early,
 * and control characters are no use there. */
static void comment_text(FILE *f, const char *s) {
  for (; *s; s++) fputc((unsigned char)*s < 0x20 || *s == '*' || *s == '/' ? '_' : *s, f);
}

/* The bytes as a brace list: 16 a line, "0x12,". Any C compiler takes it,
 * but compilers parse it slowly (GCC: about 1.5 s a megabyte). */
static void bytes_array(FILE *f, const unsigned char *b, size_t n) {
  static const char digits[] = "0123456789abcdef";
  char line[2 + 16 * 5 + 1];
  fputs("{\n", f);
  for (size_t i = 0; i < n; i += 16) {
    size_t k = 0;
    line[k++] = ' ';
    line[k++] = ' ';
    for (size_t j = i; j < n && j < i + 16; j++) {
      line[k++] = '0';
      line[k++] = 'x';
      line[k++] = digits[b[j] >> 4];
      line[k++] = digits[b[j] & 15];
      line[k++] = ',';
    }
    line[k++] = '\n';
    fwrite(line, 1, k, f);
  }
  fputs("};\n", f);
}

/*
 * The bytes as string literals, 64 bytes a line, which GCC and Clang read
 * about 15 times faster than a brace list. Printable characters stand for
 * themselves; the rest, and '"', '\\' and '?' (trigraphs), are 3-digit
 * octal escapes, which never swallow a following digit. The array is sized
 * exactly, so the literal's NUL is not stored (valid C, not C++).
 */
static void bytes_string(FILE *f, const unsigned char *b, size_t n) {
  char line[4 + 64 * 4 + 2];
  for (size_t i = 0; i < n; i += 64) {
    size_t k = 0;
    line[k++] = ' ';
    line[k++] = ' ';
    line[k++] = '"';
    for (size_t j = i; j < n && j < i + 64; j++) {
      unsigned c = b[j];
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') {
        line[k++] = (char)c;
      } else {
        line[k++] = '\\';
        line[k++] = (char)('0' + (c >> 6));
        line[k++] = (char)('0' + ((c >> 3) & 7));
        line[k++] = (char)('0' + (c & 7));
      }
    }
    line[k++] = '"';
    line[k++] = '\n';
    fwrite(line, 1, k, f);
  }
  fputs(";\n", f);
}

static void write_c(FILE *f, const char *base, const char *sym, const unsigned char *b,
                    size_t n, const char *hex, int array) {
  fputs("/* Generated by gk embed from '", f);
  comment_text(f, base);
  /* POSIX positional arguments: the symbol appears many times. */
  fprintf(f, "': %1$zu bytes, sha256 %2$s.\n"
             " * Do not edit. Open with gk_archive_open_memory(%3$s, %3$s_size, &ar);\n"
             " * declare: extern const unsigned char %3$s[]; extern const size_t %3$s_size; */\n"
             "#include <stddef.h>\n\n"
             "/* 8-byte alignment: the bytes are used in place, and some readers of\n"
             " * the SQLite pages behind them like aligned words. */\n"
             "#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n"
             "#define GK_EMBED_ALIGNED _Alignas(8)\n"
             "#elif defined(__GNUC__)\n"
             "#define GK_EMBED_ALIGNED __attribute__((aligned(8)))\n"
             "#else\n"
             "#define GK_EMBED_ALIGNED\n"
             "#endif\n",
          n, hex, sym);
  if (!array)
    fputs("/* One long string: past the 4095 characters ISO C promises, which\n"
          " * GCC and Clang take (-pedantic would say so). */\n"
          "#if defined(__GNUC__)\n"
          "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
          "#endif\n",
          f);
  fprintf(f, "\nextern const unsigned char %1$s[];\n"
             "extern const size_t %1$s_size;\n\n"
             "GK_EMBED_ALIGNED const unsigned char %1$s[%2$zu] =%3$s",
          sym, n, array ? " " : "\n");
  if (array)
    bytes_array(f, b, n);
  else
    bytes_string(f, b, n);
  fprintf(f, "const size_t %s_size = %zu;\n", sym, n);
}

/* The .incbin form names the archive by absolute path, quoted for gas. */
static int write_asm(FILE *f, const char *base, const char *abs, const char *sym,
                     size_t n, const char *hex) {
  for (const char *s = abs; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\') return -1;
  fputs("/* Generated by gk embed --asm from '", f);
  comment_text(f, base);
  /* POSIX positional arguments: the symbol appears many times. */
  fprintf(f, "': %1$zu bytes, sha256 %2$s.\n"
             " * Do not edit. Open with gk_archive_open_memory(%3$s, %3$s_size, &ar);\n"
             " * declare: extern const unsigned char %3$s[]; extern const size_t %3$s_size;\n"
             " * The sha256 above changes with the archive, so this file does too,\n"
             " * and build tools reassemble it. */\n"
             "\t.section .rodata.%3$s,\"a\",@progbits\n"
             "\t.balign 8\n"
             "\t.globl %3$s\n"
             "\t.type %3$s, @object\n"
             "%3$s:\n"
             "\t.incbin \"%4$s\"\n"
             ".L%3$s_end:\n"
             "\t.size %3$s, .L%3$s_end - %3$s\n"
             "\t.balign 8\n"
             "\t.globl %3$s_size\n"
             "\t.type %3$s_size, @object\n"
             "%3$s_size:\n"
             "#if defined(__SIZEOF_SIZE_T__) && __SIZEOF_SIZE_T__ == 4\n"
             "\t.long .L%3$s_end - %3$s\n"
             "\t.size %3$s_size, 4\n"
             "#else\n"
             "\t.quad .L%3$s_end - %3$s\n"
             "\t.size %3$s_size, 8\n"
             "#endif\n"
             "\t.section .note.GNU-stack,\"\",@progbits\n",
          n, hex, sym, abs);
  return 0;
}

int cmd_embed(int argc, char **argv) {
  embed_args a = {0};
  int rc = cli_parse(&embed_cmd, argc, argv, &a);
  char defsym[256], hex[65], err[1024];
  unsigned char sha[32];
  if (rc >= 0) return rc;
  rc = EXIT_FAIL;
  const char *path = a.path, *out = a.out, *sym = a.sym;
  int as = a.as, array = a.array;
  if (!path || !out) {
    cli_error("embed", "needs an archive and -o OUT (see 'gk embed --help')");
    return EXIT_USAGE;
  }
  if (as && array) {
    cli_error("embed", "--array and --asm are two different outputs; choose one");
    return EXIT_USAGE;
  }
  if (!sym) {
    default_symbol(path, defsym, sizeof defsym);
    sym = defsym;
  }
  if (!c_identifier(sym)) {
    cli_error("embed",
              "symbol '%s' is not a C identifier (letters, digits and '_', not "
              "starting with a digit, not a keyword); choose one with --symbol",
              sym);
    return EXIT_USAGE;
  }

  size_t n = 0;
  unsigned char *bytes = read_all(path, &n);
  gk_archive *ar = NULL;
  char *abs = NULL;
  if (!bytes) {
    cli_error("embed", "cannot read '%s': %s", path, strerror(errno));
    return EXIT_FAIL;
  }
  /* Embedding something libgk cannot open would only fail later, inside
   * the user's program: check it here, from the very bytes embedded. */
  size_t nrows;
  int st = gk_archive_open_memory(bytes, n, &ar);
  if (st != GK_OK || (st = gk_archive_count(ar, &nrows)) != GK_OK) {
    const char *why = ar ? gk_archive_errmsg(ar) : gk_last_error();
    cli_error("embed", "'%s' is not an archive libgk can open: %s", path,
              *why ? why : gk_strerror(st));
    goto embed_out;
  }
  if (sodium_init() < 0) {
    cli_error("embed", "libsodium failed to initialize");
    goto embed_out;
  }
  crypto_hash_sha256(sha, bytes, n);
  cli_hex(sha, hex);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (as && !(abs = realpath(path, NULL))) {
    cli_error("embed", "cannot resolve the path of '%s': %s", path, strerror(errno));
    goto embed_out;
  }
  cli_out o;
  if (cli_out_open(&o, out, err, sizeof err) != 0) {
    cli_error("embed", "%s", err);
    goto embed_out;
  }
  if (as) {
    if (write_asm(o.f, base, abs, sym, n, hex) != 0) {
      cli_out_abort(&o);
      cli_error("embed",
                "the path '%s' has a quote, backslash or control character that "
                ".incbin cannot take; move the archive or use the C form",
                abs);
      goto embed_out;
    }
  } else {
    write_c(o.f, base, sym, bytes, n, hex, array);
  }
  if (cli_out_commit(&o, err, sizeof err) != 0) {
    cli_error("embed", "%s", err);
    goto embed_out;
  }
  if (strcmp(out, "-"))
    fprintf(stderr, "gk embed: wrote '%s' (%s, %zu bytes as %s)\n", out,
            as ? "assembler" : "C", n, sym);
  rc = EXIT_OK;
embed_out:
  gk_archive_close(ar);
  free(abs);
  free(bytes);
  return rc;
}
