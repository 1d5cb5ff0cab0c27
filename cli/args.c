/* args.c - the option parser of the gk commands (args.h). */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

/* Where a command writes is one option everywhere: -o, --out and --output
 * (documented as one of them). */
static int is_out(const char *name) {
  return strcmp(name, "--out") == 0 || strcmp(name, "--output") == 0;
}

/* Whether argument a names option o: 0 not at all; 1 by itself (a value,
 * if the option takes one, comes next); 2 with its value in *val
 * ("--name=VALUE", or "-j8" for a CLI_GLUED alias). */
static int names(const cli_option *o, const char *a, const char **val) {
  const char *longs[] = {o->name, is_out(o->name) ? (o->name[5] ? "--out" : "--output") : NULL};
  const char *alias = is_out(o->name) ? "-o" : o->alias;
  for (int k = 0; k < 2 && longs[k]; k++) {
    size_t n = strlen(longs[k]);
    if (strncmp(a, longs[k], n) != 0) continue;
    if (a[n] == '\0') return 1;
    if (a[n] == '=' && o->arg) {
      *val = a + n + 1;
      return 2;
    }
  }
  if (!alias) return 0;
  if (strcmp(a, alias) == 0) return 1;
  size_t n = strlen(alias);
  if ((o->flags & CLI_GLUED) && strncmp(a, alias, n) == 0 && a[n]) {
    *val = a + n;
    return 2;
  }
  return 0;
}

/* The option that argument a names; NULL when none. */
static const cli_option *find(const cli_option *opts, const char *a, const char **val,
                              int *how) {
  for (const cli_option *o = opts; o && o->name; o++)
    if ((*how = names(o, a, val))) return o;
  return NULL;
}

int cli_parse(const cli_command *c, int argc, char **argv, void *fields) {
  int nargs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    int how = 0;
    if (c->usage && cli_is_help(a)) {
      fputs(c->usage, stdout);
      return EXIT_OK;
    }
    const cli_option *o = find(c->opts, a, &val, &how);
    if (o) {
      if (o->arg && how == 1) {
        if (i + 1 >= argc) {
          cli_error(c->name, "option '%s' needs a value (see 'gk %s --help')", a, c->name);
          return EXIT_USAGE;
        }
        val = argv[++i];
      }
      /* A glued value's option is the alias itself ("-j", not "-j8"). */
      cli_arg t = {c->name, how == 2 && a[1] != '-' ? o->alias : a, val, argc, argv, &i};
      void *field = (char *)fields + o->field;
      if (o->take) {
        if (o->take(field, &t) != 0) return EXIT_USAGE;
      } else if (o->arg) {
        *(const char **)field = val;
      } else {
        *(int *)field = 1;
      }
      continue;
    }
    if (a[0] == '-' && !(c->flags & CLI_ANY_ARG) && !(a[1] == '\0' && (c->flags & CLI_DASH))) {
      cli_error(c->name, "unknown option '%s' (see 'gk %s --help')", a, c->name);
      return EXIT_USAGE;
    }
    const char **args = (const char **)((char *)fields + c->args);
    cli_arg t = {c->name, NULL, a, argc, argv, &i};
    if (nargs < c->max_args) {
      args[nargs++] = a;
    } else if (c->extra) {
      if (c->extra(fields, &t) != 0) return EXIT_USAGE;
    } else {
      if (c->refuse)
        cli_error(c->name, c->refuse, a, c->name);
      else
        cli_error(c->name, "one archive at a time ('%s' and '%s')", args[0], a);
      return EXIT_USAGE;
    }
  }
  return -1;
}

int cli_add(void *field, const cli_arg *a) {
  cli_list *l = field;
  l->v[l->n++] = a->value;
  return 0;
}
