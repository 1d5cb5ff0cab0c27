/*
 * spawn.c - starting a command, for gk.spawn and gk.run (lproc.c) and for
 * the fast path's re-runs (fast.c). No Lua here.
 *
 * A child's stdin is /dev/null, so that a compiler never reads the terminal.
 * Whether exec worked is learned through a close-on-exec pipe: an empty read
 * means the exec happened, otherwise the child wrote its errno. That turns
 * "cc: No such file or directory" into a Lua error value instead of a child
 * exiting 127 with a message nobody asked for.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"

/* A pipe whose both ends are close-on-exec. pipe2 makes it so atomically;
 * elsewhere (macOS) fcntl follows pipe, which is as good here: only the
 * engine's thread forks and execs, so no child can be started between the
 * two calls and inherit the descriptors. */
int gkr__cloexec_pipe(int fd[2]) {
#if GK_HAVE_PIPE2
  return pipe2(fd, O_CLOEXEC);
#else
  if (pipe(fd) != 0) return -1;
  if (fcntl(fd[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fd[1], F_SETFD, FD_CLOEXEC) != 0) {
    int e = errno;
    close(fd[0]), close(fd[1]);
    errno = e;
    return -1;
  }
  return 0;
#endif
}

/* The child's half: only async-signal-safe calls between fork and exec. */
static void child(char **argv, const char *cwd, int in, int out, int err,
                  int report) {
  int e;
  if (cwd && chdir(cwd) != 0) goto fail;
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) goto fail;
  execvp(argv[0], argv);
fail:
  e = errno;
  ssize_t w = write(report, &e, sizeof e);
  (void)w;
  _exit(127);
}

/* Forks and execs; returns the pid, or -1 with errno set (exec failures
 * included, the child then already reaped). gk.spawn and gk.run (lproc.c)
 * start their commands through it, and the fast path (fast.c) runs them
 * again through it. */
pid_t gkr__start(char **argv, const char *cwd, int out, int err) {
  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int rep[2];
  if (gkr__cloexec_pipe(rep) != 0) {
    close(in);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(rep[0]);
    child(argv, cwd, in, out, err, rep[1]);
  }
  int e = errno;
  close(in);
  close(rep[1]);
  if (pid < 0) {
    close(rep[0]);
    errno = e;
    return -1;
  }
  int child_errno = 0;
  ssize_t n;
  do n = read(rep[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(rep[0]);
  if (n > 0) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    errno = child_errno;
    return -1;
  }
  return pid;
}

int gkr__exit_code(int st) {
  return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
}
