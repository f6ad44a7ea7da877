/*
 * Albedo's stdio launcher in C: the same contract as launcher.py (which it
 * replaces when a C compiler was there at install time), at a fraction of the
 * memory: a Python interpreter costs ~4.5 MB PSS per connection, this ~0.3 MB.
 *
 * Usage: albedo-launcher CWD -- COMMAND [ARGS...]
 *
 * fd 0, 1, 2: the server's stdin, stdout, stderr (passed straight through).
 * fd 3: the lifeline. The daemon first writes one line {"env": {"K": "V", ...}}
 * (the server's exact environment); the launcher writes one JSON line per
 * event: {"spawned": pid} | {"spawnError": errno, "message": ..., "where": ...}
 * | {"exit": code, "signal": name} | {"reaped": true}.
 *
 * The launcher runs in a session of its own (the daemon spawns it detached,
 * and it calls setsid itself when it was not), so signals sent to the
 * daemon's process group or by its terminal (SIGHUP, SIGINT, SIGQUIT,
 * kill -9 -PGID) never reach it: it ends only by its shutdown, never before
 * it has cleaned up. Shutdown starts on EOF on the lifeline (the daemon closed
 * it or died, even by SIGKILL): wait GRACE for the server to exit (its stdin is
 * closed too), SIGTERM its process group and every re-parented descendant,
 * wait GRACE, then SIGKILL them, again and again until none is left (a
 * descendant re-parented meanwhile is caught too) or GRACE has passed. The
 * launcher is a child subreaper, so grandchildren that escape the group are
 * found. SIGHUP, SIGINT, SIGQUIT or SIGTERM sent to the launcher itself start
 * the same shutdown, without the first wait (the server's stdin is still
 * open, so it has no reason to exit by itself). GRACE is 2 s.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIFELINE 3
#define MAX_ENV_BYTES (4 << 20)

static pid_t server = -1;
static int server_status = -1; /* -1: not reaped yet */
static int reported = 0;
static const double grace = 2.0;

static void say(const char *line) {
  size_t n = strlen(line);
  while (n > 0) {
    ssize_t w = write(LIFELINE, line, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    line += w;
    n -= (size_t)w;
  }
}

/* Appends s to out as a JSON string body (no quotes). */
static void json_escape(char *out, size_t cap, const char *s) {
  size_t o = strlen(out);
  for (; *s && o + 7 < cap; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') { out[o++] = '\\'; out[o++] = (char)c; }
    else if (c < 0x20) o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
    else out[o++] = (char)c;
  }
  out[o] = 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reap_all(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == server && server_status < 0) server_status = status;
  }
}

/* Direct children of the launcher (re-parented orphans included); returns how many were written. */
static int children(pid_t *out, int cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0;
  long p;
  while (n < cap && fscanf(f, "%ld", &p) == 1) out[n++] = (pid_t)p;
  fclose(f);
  return n;
}

static int group_alive(void) {
  return kill(-server, 0) == 0 || errno == EPERM;
}

static void signal_all(int sig) {
  pid_t kids[4096];
  kill(-server, sig);
  int n = children(kids, 4096);
  for (int i = 0; i < n; i++) kill(kids[i], sig);
}

/* Waits until the server (and, unless server_only, its group and every child) is gone. */
static int wait_gone(double seconds, int server_only) {
  double deadline = now() + seconds;
  pid_t kids[1];
  for (;;) {
    reap_all();
    if (server_status >= 0 && (server_only || (!group_alive() && children(kids, 1) == 0))) return 1;
    if (now() >= deadline) return 0;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static void report_exit(void) {
  char line[128];
  if (server_status < 0 || reported) return;
  reported = 1;
  if (WIFSIGNALED(server_status)) {
    const char *name = sigabbrev_np(WTERMSIG(server_status));
    snprintf(line, sizeof line, "{\"exit\": null, \"signal\": \"SIG%s\"}\n", name ? name : "UNKNOWN");
  } else {
    snprintf(line, sizeof line, "{\"exit\": %d, \"signal\": null}\n", WEXITSTATUS(server_status));
  }
  say(line);
}

/* SIGKILL the group and every child, over and over: a process that dies re-parents its children here. */
static void kill_until_gone(double seconds) {
  double deadline = now() + seconds;
  for (;;) {
    signal_all(SIGKILL);
    if (wait_gone(0, 0) || now() >= deadline) return;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static void shutdown_all(double first_wait) {
  if (server_status < 0) wait_gone(first_wait, 1);
  if (!wait_gone(0, 0)) {
    signal_all(SIGTERM);
    if (!wait_gone(grace, 0)) kill_until_gone(grace);
  }
  report_exit();
  say("{\"reaped\": true}\n");
  _exit(0);
}

/* ---- the env line: {"env": {"K": "V", ...}} with JSON string escapes ---- */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
  return p;
}

static void put_utf8(char **o, unsigned cp) {
  char *w = *o;
  if (cp < 0x80) *w++ = (char)cp;
  else if (cp < 0x800) { *w++ = (char)(0xC0 | (cp >> 6)); *w++ = (char)(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) { *w++ = (char)(0xE0 | (cp >> 12)); *w++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *w++ = (char)(0x80 | (cp & 0x3F)); }
  else {
    *w++ = (char)(0xF0 | (cp >> 18)); *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *w++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *w++ = (char)(0x80 | (cp & 0x3F));
  }
  *o = w;
}

static int hex4(const char *p, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    *v <<= 4;
    if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  return 1;
}

/* Parses a JSON string at p (at its opening quote) into out (decoded, NUL-terminated); returns the end or NULL. */
static const char *json_string(const char *p, char *out) {
  if (*p++ != '"') return NULL;
  char *o = out;
  while (*p && *p != '"') {
    if (*p != '\\') { *o++ = *p++; continue; }
    p++;
    switch (*p) {
      case '"': case '\\': case '/': *o++ = *p++; break;
      case 'b': *o++ = '\b'; p++; break;
      case 'f': *o++ = '\f'; p++; break;
      case 'n': *o++ = '\n'; p++; break;
      case 'r': *o++ = '\r'; p++; break;
      case 't': *o++ = '\t'; p++; break;
      case 'u': {
        unsigned cp, lo;
        if (!hex4(p + 1, &cp)) return NULL;
        p += 5;
        if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p += 6;
        }
        if (cp == 0) return NULL; /* NUL cannot be in an environment */
        put_utf8(&o, cp);
        break;
      }
      default: return NULL;
    }
  }
  if (*p != '"') return NULL;
  *o = 0;
  return p + 1;
}

/* Builds envp ("K=V" strings) from the env line; NULL when it is malformed. */
static char **parse_env(const char *line) {
  const char *p = skip_ws(line);
  if (*p++ != '{') return NULL;
  p = skip_ws(p);
  char *k = malloc(strlen(line) + 1);
  if (!k || !(p = json_string(p, k)) || strcmp(k, "env") != 0) return NULL;
  p = skip_ws(p);
  if (*p++ != ':') return NULL;
  p = skip_ws(p);
  if (*p++ != '{') return NULL;
  size_t cap = 16, n = 0;
  char **envp = malloc(cap * sizeof *envp);
  char *v = malloc(strlen(line) + 1);
  if (!envp || !v) return NULL;
  p = skip_ws(p);
  while (*p && *p != '}') {
    if (!(p = json_string(p, k))) return NULL;
    p = skip_ws(p);
    if (*p++ != ':') return NULL;
    p = skip_ws(p);
    if (!(p = json_string(p, v))) return NULL;
    if (n + 2 > cap) {
      cap *= 2;
      envp = realloc(envp, cap * sizeof *envp);
      if (!envp) return NULL;
    }
    size_t len = strlen(k) + strlen(v) + 2;
    envp[n] = malloc(len);
    if (!envp[n]) return NULL;
    snprintf(envp[n], len, "%s=%s", k, v);
    n++;
    p = skip_ws(p);
    if (*p == ',') p = skip_ws(p + 1);
  }
  if (*p != '}') return NULL;
  envp[n] = NULL;
  free(k);
  free(v);
  return envp;
}

static void spawn_error(int err, const char *message, const char *where) {
  char line[1024] = "";
  char msg[512] = "";
  json_escape(msg, sizeof msg, message);
  snprintf(line, sizeof line, "{\"spawnError\": %d, \"message\": \"%s\", \"where\": \"%s\"}\n", err, msg, where);
  say(line);
}

int main(int argc, char **argv) {
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    spawn_error(0, "albedo-launcher CWD -- COMMAND [ARGS...]", "usage");
    return 2;
  }
  const char *cwd = argv[1];
  char **command = argv + 3;
  /* First of all, out of the daemon's session and group (EPERM when the daemon already spawned us detached). */
  setsid();
  /*
   * Every signal that would end the launcher (except SIGKILL) is blocked from
   * here on and read from a signalfd in the main loop, where it starts the
   * shutdown; one that comes during the shutdown stays pending, harmless.
   */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGQUIT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  fcntl(LIFELINE, F_SETFD, FD_CLOEXEC);

  /* The first line on the lifeline is the server's environment. */
  size_t cap = 65536, len = 0;
  char *first = malloc(cap);
  if (!first) return 1;
  for (;;) {
    if (len + 1 >= cap) {
      if (cap >= MAX_ENV_BYTES) { spawn_error(0, "the environment line is too long", "setup"); say("{\"reaped\": true}\n"); return 1; }
      cap *= 2;
      first = realloc(first, cap);
      if (!first) return 1;
    }
    ssize_t r = read(LIFELINE, first + len, cap - len - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) _exit(0); /* the daemon went away before telling us anything */
    len += (size_t)r;
    first[len] = 0;
    if (memchr(first, '\n', len)) break;
  }
  char **envp = parse_env(first);
  if (!envp) {
    spawn_error(0, "the environment line is not {\"env\": {...}}", "setup");
    say("{\"reaped\": true}\n");
    return 1;
  }

  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) return 1;
  pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    const char *stage = "setup";
    close(errpipe[0]);
    /* The server starts with the signal state a plain spawn would give it. */
    sigprocmask(SIG_UNBLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    /*
     * A backstop: only a SIGKILL sent to the launcher's own pid (no group
     * signal reaches it) ends it without the shutdown; the server goes with it.
     */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != launcher) _exit(127); /* the launcher died before the backstop was set */
    stage = "chdir";
    if (chdir(cwd) == 0) {
      stage = "exec";
      /* execvpe looks the command up on the launcher's PATH, which the daemon set to the server's. */
      execvpe(command[0], command, envp);
    }
    int e = errno;
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%d %s", e, stage);
    if (write(errpipe[1], buf, (size_t)n) < 0) { /* nothing more to do */ }
    _exit(127);
  }
  if (pid < 0) {
    spawn_error(errno, strerror(errno), "fork");
    say("{\"reaped\": true}\n");
    return 1;
  }
  server = pid;
  close(errpipe[1]);
  char failure[64] = "";
  ssize_t got = 0, r;
  while ((r = read(errpipe[0], failure + got, sizeof failure - 1 - (size_t)got)) > 0) got += r;
  close(errpipe[0]);
  if (got > 0) {
    failure[got] = 0;
    int e = atoi(failure);
    const char *where = strchr(failure, ' ');
    waitpid(pid, NULL, 0);
    spawn_error(e, strerror(e), where ? where + 1 : "exec");
    say("{\"reaped\": true}\n");
    return 0;
  }
  char line[64];
  snprintf(line, sizeof line, "{\"spawned\": %d}\n", (int)pid);
  say(line);

  /* The launcher holds no end of the conversation: the server owns 0, 1, 2. */
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    if (devnull > 2) close(devnull);
  }

  struct pollfd fds[2] = {{LIFELINE, POLLIN, 0}, {sfd, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, sfd < 0 ? 200 : -1) < 0 && errno != EINTR) break;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      ssize_t n = read(LIFELINE, buf, sizeof buf);
      if (n <= 0 && !(n < 0 && errno == EINTR)) shutdown_all(grace);
    }
    if (sfd >= 0 && (fds[1].revents & POLLIN)) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo != SIGCHLD) shutdown_all(0);
      }
    }
    reap_all();
    if (server_status >= 0) {
      report_exit();
      shutdown_all(0);
    }
  }
  shutdown_all(grace);
  return 0;
}
