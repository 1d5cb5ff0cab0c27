/* args.h - the option parser of the gk commands. A command describes its
 * options in a table (name, argument, target field) and cli_parse fills the
 * command's fields from argv, so that the command reads parse -> do ->
 * print and every command answers a bad option with the same words. */
#ifndef GK_CLI_ARGS_H
#define GK_CLI_ARGS_H

#include <stddef.h>

/* What a take function (below) is handed. */
typedef struct cli_arg {
  const char *cmd;   /* "build", "cache gc": messages say "gk CMD: ..." */
  const char *opt;   /* the option as typed ("--jobs=4", "-j"); NULL for an argument */
  const char *value; /* its value (or the argument); NULL for an option without one */
  int argc;          /* argv[*i] is the last argument taken: an option that */
  char **argv;       /* takes more (gk probe --launch) advances *i past them */
  int *i;
} cli_arg;

/* Takes an option or an argument instead of the parser setting the field:
 * 0, or -1 after saying why (a usage error). */
typedef int (*cli_take_fn)(void *field, const cli_arg *a);

/* One option. The table ends with a row whose name is NULL. */
typedef struct cli_option {
  const char *name;  /* "--kernel"; "--out" and "--output" are one option, also named "-o" */
  const char *alias; /* a short name ("-v"), or NULL */
  const char *arg;   /* what its value is ("FILE"); NULL: the option takes none */
  size_t field;      /* offsetof the command's field: the int a flag sets to 1,
                      * the const char * a value goes to (the last one given) */
  cli_take_fn take;  /* NULL, or what takes the option instead (lists, checks) */
  unsigned flags;    /* CLI_GLUED: the alias may carry the value ("-j8") */
} cli_option;

enum { CLI_GLUED = 1 };

/* Table rows, as git's parse-options writes them: a flag (an int field set
 * to 1), an option with a value (a const char * field), one whose value a
 * take function takes, and the end of the table. */
#define CLI_FLAG(name, alias, type, field) {name, alias, NULL, offsetof(type, field), NULL, 0}
#define CLI_VALUE(name, alias, arg, type, field) {name, alias, arg, offsetof(type, field), NULL, 0}
#define CLI_TAKE(name, alias, arg, type, field, take) \
  {name, alias, arg, offsetof(type, field), take, 0}
#define CLI_END {NULL, NULL, NULL, 0, NULL, 0}

/* The arguments of most commands: one archive, in a field `path`. */
#define CLI_ARCHIVE(type) .args = offsetof(type, path), .max_args = 1

/* A command's arguments. */
typedef struct cli_command {
  const char *name;       /* "sign" */
  const char *usage;      /* printed for -h and --help; NULL: they are unknown options */
  const cli_option *opts;
  size_t args;            /* offsetof the first of max_args const char * fields, in */
  int max_args;           /* order, for the arguments that are not options */
  /* An argument beyond those (and with CLI_ANY_ARG an unknown option) is
   * taken by extra, handed all the fields, when there is one; else refused
   * with the message `refuse` (a printf format given the argument, then the
   * command's name); else with "one archive at a time ('%s' and '%s')". */
  cli_take_fn extra;
  const char *refuse;
  unsigned flags; /* CLI_DASH: a lone "-" is an argument; CLI_ANY_ARG: see extra */
} cli_command;

enum { CLI_DASH = 1, CLI_ANY_ARG = 2 };

/*
 * Fills `fields` (the command's own struct, zeroed by the caller) from
 * argv[1..argc) in order, stopping at the first error or help. An option
 * with a value takes "--name VALUE", "--name=VALUE" or "ALIAS VALUE"; a flag
 * only its exact name or alias. Returns -1 when the command goes on,
 * EXIT_OK after printing the usage, or EXIT_USAGE after saying what is wrong
 * ("gk CMD: unknown option '--x' (see 'gk CMD --help')").
 */
int cli_parse(const cli_command *c, int argc, char **argv, void *fields);

/* A repeatable option's values, in order; v has room for argc of them (the
 * command allocates it). */
typedef struct cli_list {
  const char **v;
  size_t n;
} cli_list;

/* The take function of a cli_list field: appends the value. */
int cli_add(void *field, const cli_arg *a);

#endif
