// The thread census (docs/testing.md): preloaded into every test of the asan stage, it notes
// which tests start a thread in a program of this build, so that thread_census_check.py can hold
// the label "threads" (the tests the tsan stage runs) to what the tests really do.
//
// On a process's first pthread_create, when /proc/self/exe lies under
// PILOT_THREAD_CENSUS_ROOT, it writes PILOT_THREAD_CENSUS_DIR/<pid>: that program's path and a
// newline, then the command line of the process ctest started (this one, or the ancestor whose
// parent is ctest), its arguments separated by NUL bytes, which names the test. Nothing else
// changes: the call goes on to the next pthread_create (the sanitizer's interceptor, then libc's).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

static int noted;  // only this process's first thread is noted (a race at worst notes twice)

// The parent of pid, from /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold spaces
// and parentheses, so the fields are read after its last ')'). 0 when unknown.
static pid_t parentOf(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char* close_paren = strrchr(buf, ')');
  int ppid = 0;
  if (close_paren == NULL || sscanf(close_paren + 1, " %*c %d", &ppid) != 1) return 0;
  return (pid_t)ppid;
}

static int isCtest(pid_t pid) {
  char path[64], exe[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
  ssize_t n = readlink(path, exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\0';
  const char* base = strrchr(exe, '/');
  return strcmp(base ? base + 1 : exe, "ctest") == 0;
}

static void note(void) {
  const char* dir = getenv("PILOT_THREAD_CENSUS_DIR");
  const char* given_root = getenv("PILOT_THREAD_CENSUS_ROOT");
  char root[PATH_MAX], exe[PATH_MAX];
  if (dir == NULL || given_root == NULL || realpath(given_root, root) == NULL) return;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  size_t root_len = strlen(root);
  // A program of this build: under the root (realpath drops the root's last '/').
  if (strncmp(exe, root, root_len) != 0 || exe[root_len] != '/') return;
  pid_t test = getpid();
  for (int depth = 0; depth < 64; ++depth) {
    pid_t parent = parentOf(test);
    if (parent <= 1 || isCtest(parent)) break;
    test = parent;
  }
  char path[PATH_MAX], cmdline[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)test);
  int in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  ssize_t len = read(in, cmdline, sizeof cmdline);
  close(in);
  if (len <= 0) return;
  snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return;
  exe[n] = '\n';
  ssize_t written = write(out, exe, (size_t)n + 1);
  written = write(out, cmdline, (size_t)len);
  (void)written;
  close(out);
}

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                   void* arg) {
  static create_fn next;
  if (next == NULL) next = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
  if (!__atomic_exchange_n(&noted, 1, __ATOMIC_RELAXED)) note();
  return next(thread, attr, start, arg);
}
