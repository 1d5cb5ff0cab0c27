/*
 * cmd_cache.c - gk cache stats | verify | gc: looking after the compile
 * cache of gk build (gkcache.h; docs/cache.md).
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "args.h"
#include "cmd.h"
#include "gkcache.h"
#include "util.h"

static const char cache_usage[] =
  "usage: gk cache <stats | verify | gc> [--cache DIR] [options]\n"
  "\n"
  "Looks after the compile cache of gk build (docs/cache.md).\n"
  "\n"
  "  stats    what the cache holds: entries, disk usage, oldest and newest use\n"
  "  verify   check every entry; --fix repairs what it finds\n"
  "  gc       trim the cache to a size, least recently used first\n"
  "\n"
  "The cache is --cache DIR, else $GK_CACHE_DIR, else $HOME/.gsc/gllm/kernels.\n"
  "'gk cache SUBCOMMAND --help' shows a subcommand's options. All of them are\n"
  "safe while builds use the cache.\n";

static const char stats_usage[] =
  "usage: gk cache stats [--cache DIR] [--json]\n"
  "\n"
  "Counts the cache's entries and their disk usage (as du counts it): objects\n"
  "(compiled images), key records (what a job key produced), kept runs (version\n"
  "queries), direct-mode indexes and temporaries. 'total' is what gk cache gc\n"
  "--max-size bounds.\n"
  "Reads no object, so it is quick.\n"
  "\n"
  "  --cache DIR  the cache (default: $GK_CACHE_DIR, else $HOME/.gsc/gllm/kernels)\n"
  "  --json       one JSON object on stdout\n";

static const char verify_usage[] =
  "usage: gk cache verify [--cache DIR] [--fix] [--json]\n"
  "\n"
  "Checks every entry of the cache: each object's content hashes to its name,\n"
  "each key record parses and points only at present, sound objects of the size\n"
  "it records, each kept run parses, and nothing else sits among the entries.\n"
  "Reports temporaries left by writers that are gone (a build that was killed)\n"
  "and objects no record points at as garbage: harmless, never used.\n"
  "Reads every object. Exit status: 0 when the cache is consistent (garbage or\n"
  "not), 1 when a problem is left, 2 on a usage error.\n"
  "\n"
  "  --cache DIR  the cache (default: $GK_CACHE_DIR, else $HOME/.gsc/gllm/kernels)\n"
  "  --fix        repair: remove damaged objects, records that do not parse,\n"
  "               strays and garbage, and rewrite records without candidates\n"
  "               whose object is gone; each finding says what was done. Builds\n"
  "               compile again what was removed\n"
  "  --json       one JSON object on stdout (consistent, counts, findings)\n";

static const char gc_usage[] =
  "usage: gk cache gc --max-size SIZE [--cache DIR] [--json]\n"
  "\n"
  "Trims the cache to at most SIZE of disk usage ('total' in gk cache stats):\n"
  "objects no record points at first, then the least recently used objects (a\n"
  "build that uses an object marks it, to the hour); records lose the candidates\n"
  "of removed objects and go when none is left, so that no record points at a\n"
  "removed object. Kept runs and indexes go only when every object is gone.\n"
  "Temporaries of writers that are gone are removed too. A build running\n"
  "meanwhile compiles again what it loses.\n"
  "\n"
  "  --max-size SIZE  bytes, or a number with K, M, G or T (powers of 1024;\n"
  "                   KB, MB, GB, TB for powers of 1000), e.g. 500M, 2G, 1.5G\n"
  "  --cache DIR      the cache (default: $GK_CACHE_DIR, else $HOME/.gsc/gllm/kernels)\n"
  "  --json           one JSON object on stdout\n";

/* 1536 -> "1.5 KiB" */
static const char *human(uint64_t n, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  if (u == 0) snprintf(buf, size, "%llu B", (unsigned long long)n);
  else snprintf(buf, size, "%.1f %s", v, units[u]);
  return buf;
}

/*
 * "500M" -> 524288000. A number (a fraction allowed), then K, M, G or T
 * (powers of 1024, also written KiB...), or KB, MB, GB, TB (powers of 1000),
 * or B or nothing for bytes. Returns 0, or -1 for anything else.
 */
static int parse_size(const char *s, uint64_t *out) {
  char *end;
  if (!(*s >= '0' && *s <= '9')) return -1;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s) return -1;
  double mult = 1;
  const char *p = end;
  static const char letters[] = "kmgt";
  const char *l = *p ? strchr(letters, *p | 0x20) : NULL;
  if (l) {
    int power = (int)(l - letters) + 1;
    p++;
    double base = 1024;
    if (strcmp(p, "B") == 0 || strcmp(p, "b") == 0) base = 1000, p++;
    else if (strcmp(p, "iB") == 0 || strcmp(p, "ib") == 0) p += 2;
    for (int i = 0; i < power; i++) mult *= base;
  } else if (strcmp(p, "B") == 0 || strcmp(p, "b") == 0) {
    p++;
  }
  if (*p != '\0') return -1;
  double bytes = v * mult;
  if (bytes < 0 || bytes >= 18446744073709551615.0) return -1;
  *out = (uint64_t)bytes;
  return 0;
}

/* Opens the cache named by --cache or the environment; NULL after saying
 * why. An absent folder is an error, not an empty cache: a mistyped path
 * must not look clean. */
static gkc_cache *open_cache(const char *cmd, const char *dir) {
  char def[PATH_MAX];
  if (!dir) {
    if (gkc_default_dir(def, sizeof def) != 0) {
      cli_error(cmd, "no cache folder: pass --cache DIR or set GK_CACHE_DIR (or HOME)");
      return NULL;
    }
    dir = def;
  }
  char v1[PATH_MAX + 8];
  struct stat st;
  snprintf(v1, sizeof v1, "%s/v1", dir);
  if (stat(dir, &st) != 0) {
    cli_error(cmd, "no cache at '%s': %s; pass --cache DIR, the folder gk build used",
              dir, strerror(errno));
    return NULL;
  }
  if (stat(v1, &st) != 0 || !S_ISDIR(st.st_mode)) {
    cli_error(cmd, "'%s' is not a gk build cache (it has no v1 folder); pass --cache DIR, "
                   "the folder gk build used", dir);
    return NULL;
  }
  gkc_cache *c = NULL;
  gk_err err;
  if (gkc_open(dir, &c, &err) != 0) {
    cli_error(cmd, "%s", err.msg);
    return NULL;
  }
  return c;
}

/* What the subcommands are given; each takes the options of its table. */
typedef struct cache_args {
  const char *dir, *max;
  int json, fix;
} cache_args;

static int take_dir(void *field, const cli_arg *a) {
  if (!*a->value) {
    cli_error(a->cmd, "option '--cache' needs a folder, got ''");
    return -1;
  }
  *(const char **)field = a->value;
  return 0;
}

/* An argument is none of theirs. */
#define UNKNOWN_ARG "unknown argument '%s' (see 'gk %s --help')"

/* The options every subcommand takes. */
#define CACHE_OPTIONS                                                  \
  CLI_TAKE("--cache", NULL, "DIR", cache_args, dir, take_dir),       \
  CLI_FLAG("--json", NULL, cache_args, json)

static const cli_option stats_opts[] = {CACHE_OPTIONS, CLI_END};
static const cli_option verify_opts[] = {
  CACHE_OPTIONS, CLI_FLAG("--fix", NULL, cache_args, fix), CLI_END};
static const cli_option gc_opts[] = {
  CACHE_OPTIONS, CLI_VALUE("--max-size", NULL, "SIZE", cache_args, max), CLI_END};

static void print_json(json_t *j) {
  json_dumpf(j, stdout, JSON_INDENT(2));
  putchar('\n');
  json_decref(j);
}

/* ---- stats ----------------------------------------------------------------- */

static const char *day(int64_t t, char *buf, size_t size) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (!t || !gmtime_r(&tt, &tm)) return "-";
  strftime(buf, size, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

static int cache_stats(const char *cmd, const cache_args *ca) {
  gkc_cache *c = open_cache(cmd, ca->dir);
  if (!c) return EXIT_FAIL;
  gkc_usage u;
  if (gkc_stats(c, &u) != 0) {
    cli_error(cmd, "%s", gkc_errmsg(c));
    gkc_close(c);
    return EXIT_FAIL;
  }
  if (ca->json) {
    print_json(json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                         "cache", gkc_dir(c), "objects", (json_int_t)u.objects,
                         "object_bytes", (json_int_t)u.object_bytes, "records",
                         (json_int_t)u.records, "record_bytes", (json_int_t)u.record_bytes,
                         "runs", (json_int_t)u.runs, "run_bytes", (json_int_t)u.run_bytes,
                         "indexes", (json_int_t)u.indexes, "index_bytes",
                         (json_int_t)u.index_bytes,
                         "temps", (json_int_t)u.temps, "temp_bytes", (json_int_t)u.temp_bytes,
                         "total_bytes", (json_int_t)u.total_bytes, "oldest_use",
                         (json_int_t)u.oldest_use, "newest_use", (json_int_t)u.newest_use));
  } else {
    char a[32], b[32];
    printf("cache        %s\n", gkc_dir(c));
    printf("objects      %8llu  %10s\n", (unsigned long long)u.objects,
           human(u.object_bytes, a, sizeof a));
    printf("records      %8llu  %10s\n", (unsigned long long)u.records,
           human(u.record_bytes, a, sizeof a));
    printf("runs         %8llu  %10s\n", (unsigned long long)u.runs, human(u.run_bytes, a, sizeof a));
    printf("indexes      %8llu  %10s\n", (unsigned long long)u.indexes,
           human(u.index_bytes, a, sizeof a));
    printf("total                  %10s  (what gc --max-size bounds)\n",
           human(u.total_bytes, a, sizeof a));
    printf("temporaries  %8llu  %10s\n", (unsigned long long)u.temps,
           human(u.temp_bytes, a, sizeof a));
    printf("last used    %s ... %s\n", day(u.oldest_use, a, sizeof a),
           day(u.newest_use, b, sizeof b));
  }
  gkc_close(c);
  return EXIT_OK;
}

/* ---- verify ------------------------------------------------------------------ */

static const char *const KIND_NAMES[] = {"damaged-object", "bad-record", "dangling",
                                         "stray", "stale-temp", "unreferenced"};

typedef struct verify_ctx {
  const char *root; /* the cache folder, dropped from paths in the text output */
  json_t *findings; /* --json */
  uint64_t problems_left;
} verify_ctx;

static void on_finding(const gkc_finding *f, void *p) {
  verify_ctx *v = p;
  if (f->problem && !f->fixed) v->problems_left++;
  if (v->findings) {
    json_array_append_new(v->findings,
                          json_pack("{s:s, s:b, s:s, s:s, s:I, s:b}", "kind", KIND_NAMES[f->kind],
                                    "problem", f->problem, "path", f->path, "detail", f->detail,
                                    "bytes", (json_int_t)f->bytes, "fixed", f->fixed));
    return;
  }
  size_t n = strlen(v->root);
  const char *path = strncmp(f->path, v->root, n) == 0 && f->path[n] == '/' ? f->path + n + 1
                                                                           : f->path;
  printf("%-14s %s: %s\n", KIND_NAMES[f->kind], path, f->detail);
}

static int cache_verify(const char *cmd, const cache_args *ca) {
  gkc_cache *c = open_cache(cmd, ca->dir);
  if (!c) return EXIT_FAIL;
  verify_ctx v = {gkc_dir(c), ca->json ? json_array() : NULL, 0};
  gkc_verify_summary s;
  if (gkc_verify(c, ca->fix ? GKC_FIX : 0, on_finding, &v, &s) != 0) {
    cli_error(cmd, "%s", gkc_errmsg(c));
    json_decref(v.findings);
    gkc_close(c);
    return EXIT_FAIL;
  }
  if (ca->json) {
    print_json(json_pack("{s:s, s:b, s:b, s:{s:I, s:I, s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:o}",
                         "cache", gkc_dir(c), "consistent", v.problems_left == 0, "fixing", ca->fix,
                         "checked", "objects", (json_int_t)s.objects, "records",
                         (json_int_t)s.records, "runs", (json_int_t)s.runs, "temps",
                         (json_int_t)s.temps, "problems", (json_int_t)s.problems,
                         "problems_left", (json_int_t)v.problems_left, "garbage",
                         (json_int_t)s.garbage, "fixed", (json_int_t)s.fixed, "fixed_bytes",
                         (json_int_t)s.fixed_bytes, "findings", v.findings));
  } else {
    char a[32];
    printf("checked %llu objects, %llu records, %llu runs, %llu temporaries: "
           "%llu problem%s, %llu garbage",
           (unsigned long long)s.objects, (unsigned long long)s.records,
           (unsigned long long)s.runs, (unsigned long long)s.temps,
           (unsigned long long)s.problems, s.problems == 1 ? "" : "s",
           (unsigned long long)s.garbage);
    if (ca->fix) printf("; fixed %llu (%s freed)", (unsigned long long)s.fixed,
                    human(s.fixed_bytes, a, sizeof a));
    printf("\n");
    if (v.problems_left)
      fprintf(stderr, "gk cache verify: '%s' is inconsistent: %llu problem%s left%s\n",
              gkc_dir(c), (unsigned long long)v.problems_left, v.problems_left == 1 ? "" : "s",
              ca->fix ? "" : "; 'gk cache verify --fix' repairs them");
    else if (s.garbage && !ca->fix)
      fprintf(stderr, "gk cache verify: consistent; 'gk cache verify --fix' or 'gk cache gc' "
                      "removes the garbage\n");
  }
  gkc_close(c);
  return v.problems_left ? EXIT_FAIL : EXIT_OK;
}

/* ---- gc ------------------------------------------------------------------------ */

static int cache_gc(const char *cmd, const cache_args *ca) {
  uint64_t max;
  if (!ca->max) {
    cli_error(cmd, "missing --max-size SIZE, the size to trim the cache to, e.g. 2G "
                   "(see 'gk cache gc --help')");
    return EXIT_USAGE;
  }
  if (parse_size(ca->max, &max) != 0) {
    cli_error(cmd, "bad size '%s' for --max-size: give bytes or a number with K, M, G or T "
                   "(powers of 1024), e.g. 500M or 2G", ca->max);
    return EXIT_USAGE;
  }
  gkc_cache *c = open_cache(cmd, ca->dir);
  if (!c) return EXIT_FAIL;
  gkc_gc_result r;
  if (gkc_gc(c, max, &r) != 0) {
    cli_error(cmd, "%s", gkc_errmsg(c));
    gkc_close(c);
    return EXIT_FAIL;
  }
  if (ca->json) {
    print_json(json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                         "cache", gkc_dir(c), "max_bytes", (json_int_t)max, "before_bytes",
                         (json_int_t)r.before_bytes, "after_bytes", (json_int_t)r.after_bytes,
                         "removed_objects", (json_int_t)r.removed_objects,
                         "removed_object_bytes", (json_int_t)r.removed_object_bytes,
                         "removed_records", (json_int_t)r.removed_records, "rewritten_records",
                         (json_int_t)r.rewritten_records, "removed_runs",
                         (json_int_t)r.removed_runs, "removed_temps",
                         (json_int_t)r.removed_temps, "removed_temp_bytes",
                         (json_int_t)r.removed_temp_bytes));
  } else {
    char a[32], b[32], m[32], o[32], t[32];
    printf("%s -> %s (limit %s): removed %llu objects (%s), %llu records, %llu runs; "
           "rewrote %llu records; removed %llu stale temporaries (%s)\n",
           human(r.before_bytes, a, sizeof a), human(r.after_bytes, b, sizeof b),
           human(max, m, sizeof m), (unsigned long long)r.removed_objects,
           human(r.removed_object_bytes, o, sizeof o), (unsigned long long)r.removed_records,
           (unsigned long long)r.removed_runs, (unsigned long long)r.rewritten_records,
           (unsigned long long)r.removed_temps, human(r.removed_temp_bytes, t, sizeof t));
  }
  int over = r.after_bytes > max;
  if (over)
    cli_error(cmd, "'%s' is still over the limit: some entries could not be removed "
                   "(see 'gk cache verify')", gkc_dir(c));
  gkc_close(c);
  return over ? EXIT_FAIL : EXIT_OK;
}

/* ---- dispatch ------------------------------------------------------------------ */

/* The subcommands: their arguments, then what they do with them. */
static const struct subcommand {
  cli_command args;
  int (*run)(const char *cmd, const cache_args *ca);
} subcommands[] = {
  {{.name = "cache stats", .usage = stats_usage, .opts = stats_opts, .refuse = UNKNOWN_ARG},
   cache_stats},
  {{.name = "cache verify", .usage = verify_usage, .opts = verify_opts, .refuse = UNKNOWN_ARG},
   cache_verify},
  {{.name = "cache gc", .usage = gc_usage, .opts = gc_opts, .refuse = UNKNOWN_ARG}, cache_gc},
};

int cmd_cache(int argc, char **argv) {
  if (argc < 2) {
    cli_error("cache", "needs a subcommand: stats, verify or gc (see 'gk cache --help')");
    return EXIT_USAGE;
  }
  const char *sub = argv[1];
  if (cli_is_help(sub) || strcmp(sub, "help") == 0) {
    fputs(cache_usage, stdout);
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++) {
    const struct subcommand *c = &subcommands[i];
    if (strcmp(sub, c->args.name + strlen("cache ")) != 0) continue;
    cache_args ca = {0};
    int st = cli_parse(&c->args, argc - 1, argv + 1, &ca);
    return st >= 0 ? st : c->run(c->args.name, &ca);
  }
  cli_error("cache", "unknown subcommand '%s': use stats, verify or gc (see 'gk cache --help')",
            sub);
  return EXIT_USAGE;
}
