// frugal-keeper: the process every job runs under (decisions 0019 and 0050). Only
// frugal-worker starts it, from the directory the worker's own binary is in:
//
//   frugal-keeper WORKER_PID UID GID OWN_UID CWD PROGRAM ARGV0 [ARG...]
//
// UID "-": the job keeps the keeper's credentials (GID and OWN_UID are then ignored).
// OWN_UID "1": no other attempt runs as UID, so every process of it is this job's.
// PROGRAM is what the worker found in the job's PATH, or the command's own path (a relative
// one is taken from CWD). The keeper's standard input, output and error, and its
// environment, are the job's.
//
// The keeper leads its process group (the worker spawned it so), asks the kernel for a
// signal when the worker dies (PR_SET_PDEATHSIG) and then kills the whole group, and with
// an own uid every process of that uid, so a job never outlives its worker. It reaps the
// job's orphans (a subreaper) and exits as the job did, so the worker reads the job's exit
// code or signal from the keeper's status. It is a small program of its own, not a fork of
// the worker: a fork copied the worker's memory map for every job (and the copy-on-write
// faults that followed), and a copy of the worker's memory is what a job should be furthest
// from.
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/uid_sweep.h"

extern char** environ;

namespace {

struct Job {
  pid_t worker = 0;
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  bool own_uid = false;
  const char* cwd = nullptr;
  const char* program = nullptr;
  char** argv = nullptr;
};

// Async-signal-safe: a message to the job's output (the keeper's standard error).
void Say(const char* a, const char* b) {
  (void)!write(2, a, strlen(a));
  (void)!write(2, b, strlen(b));
  (void)!write(2, "\n", 1);
}

bool ParseId(const char* text, unsigned long max, unsigned long& out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  out = strtoul(text, &end, 10);
  return errno == 0 && *end == '\0' && out <= max;
}

bool Parse(int argc, char** argv, Job& job) {
  if (argc < 8) return false;
  unsigned long worker = 0, uid = 0, gid = 0;
  if (!ParseId(argv[1], 0x7fffffff, worker) || worker < 2) return false;
  job.worker = static_cast<pid_t>(worker);
  job.switch_user = strcmp(argv[2], "-") != 0;
  if (job.switch_user) {
    if (!ParseId(argv[2], 0xfffffffe, uid) || uid == 0 || !ParseId(argv[3], 0xfffffffe, gid) ||
        gid == 0 || (strcmp(argv[4], "0") != 0 && strcmp(argv[4], "1") != 0)) {
      return false;
    }
    job.uid = static_cast<uid_t>(uid);
    job.gid = static_cast<gid_t>(gid);
    job.own_uid = argv[4][0] == '1';
  }
  job.cwd = argv[5];
  job.program = argv[6];
  job.argv = argv + 7;
  return job.program[0] != '\0' && job.cwd[0] != '\0';
}

volatile sig_atomic_t g_parent_died = 0;
void OnParentDied(int) { g_parent_died = 1; }

// The job itself, in the keeper's child: signals as a shell leaves them, its credentials,
// its directory, then the program. Never returns.
[[noreturn]] void ExecJob(const Job& job) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  prctl(PR_SET_PDEATHSIG, 0);
  if (job.switch_user) {
    const gid_t gid = job.gid;
    if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(job.uid) != 0) {
      Say("[frugal-worker] cannot take the job's user: ", strerror(errno));
      _exit(126);
    }
  }
  if (chdir(job.cwd) != 0) {
    Say("[frugal-worker] cannot enter the working directory: ", strerror(errno));
    _exit(126);
  }
  execve(job.program, job.argv, environ);
  Say("[frugal-worker] cannot start the command: ", strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

// Kills what the job left: with an own uid every process of it (setsid escapees too), then
// the keeper's group, the keeper included.
[[noreturn]] void KillJobAndDie(const Job& job) {
  if (job.switch_user && job.own_uid) frugal::worker::KillAllOf(job.uid);
  kill(0, SIGKILL);
  _exit(137);
}

}  // namespace

int main(int argc, char** argv) {
  Job job;
  if (!Parse(argc, argv, job)) {
    Say("frugal-keeper: started by frugal-worker only: ",
        "frugal-keeper WORKER_PID UID|- GID OWN_UID CWD PROGRAM ARGV0 [ARG...]");
    return 126;
  }
  setpgid(0, 0);  // the worker spawned it leading its group; this only makes sure
  struct sigaction sa {};
  sa.sa_handler = OnParentDied;  // no SA_RESTART: the wait below returns EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
  // The worker stops a job by signalling its group; the keeper outlasts SIGTERM and the
  // like to report how the job ended (SIGKILL still ends it).
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE}) signal(sig, SIG_IGN);
  signal(SIGCHLD, SIG_DFL);
  prctl(PR_SET_PDEATHSIG, SIGUSR2);
  if (getppid() != job.worker) KillJobAndDie(job);  // the worker died before the request
  // Orphans of the job become the keeper's children, so it reaps them, not init.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // the keeper re-raises the job's signal below
  const pid_t pid = fork();
  if (pid < 0) _exit(126);
  if (pid == 0) ExecJob(job);
  for (;;) {
    if (g_parent_died) KillJobAndDie(job);
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) _exit(126);   // no children left without the job's status: cannot happen
    if (done != pid) continue;  // a reparented orphan
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);  // a signal that does not end a process by default
  }
}
