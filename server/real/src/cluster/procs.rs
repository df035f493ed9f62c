//! Every node process flymc starts, in one process-wide registry, so nothing outlives flymc:
//!
//! - each node is its own process group (crash = SIGKILL to the group);
//! - each is started from one long-lived spawner thread with `PR_SET_PDEATHSIG = SIGKILL`, so
//!   the kernel kills it when flymc dies, even by SIGKILL (the death signal follows the thread
//!   that forked, hence one thread that never ends);
//! - a handler of SIGINT (Ctrl-C), SIGTERM, SIGHUP and SIGQUIT, and every backend's `Drop`, kill
//!   what is registered and remove the registered run directories; the signal's number decides
//!   the exit status (128 + it: 130, 143, 129, 131);
//! - the hook's own watchdog ends a node whose event server is gone (`flymc-hook`);
//! - after a SIGKILL, the janitor ([`super::janitor`]) kills what is still registered (with
//!   its process group: what CRIU forked) and removes the registered directories.
//!
//! A waiter thread per process notices its exit (without reaping it first, so its pid cannot be
//! reused while someone may still signal it), reports it, then reaps it.
//!
//! A node may also start in a PID and time namespace of its own ([`spawn_in_namespaces`]), as
//! the first process there, which CRIU needs to checkpoint and restore it ([`crate::snapshot`]):
//! it is still flymc's child, own session, same death signal, so everything above holds for it,
//! and for a tree CRIU restored next to it ([`adopt`]).

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, MutexGuard, Once, OnceLock};
use std::time::{Duration, Instant};

/// Called once with a description of how the process ended ("exit status 3", "killed by
/// signal 9").
pub type OnExit = Box<dyn FnOnce(String) + Send>;

struct Job {
    cmd: Command,
    on_exit: OnExit,
    namespaces: bool,
    reply: mpsc::Sender<io::Result<u32>>,
}

#[derive(Default)]
struct RegState {
    /// Live (or exited but not yet reaped) processes: pid -> exited.
    procs: HashMap<u32, bool>,
    dirs: HashSet<PathBuf>,
    shutting_down: bool,
}

struct Registry {
    state: Mutex<RegState>,
    changed: Condvar,
    spawner: Mutex<mpsc::Sender<Job>>,
}

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("flymc-spawner".into())
            .spawn(move || {
                // Never returns while the process lives: the sender sits in a static.
                while let Ok(job) = rx.recv() {
                    let r = spawn_here(job.cmd, job.on_exit, job.namespaces);
                    let _ = job.reply.send(r);
                }
            })
            .expect("cannot start the process spawner thread");
        Registry {
            state: Mutex::new(RegState::default()),
            changed: Condvar::new(),
            spawner: Mutex::new(tx),
        }
    })
}

fn lock() -> MutexGuard<'static, RegState> {
    registry().state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start `cmd` as a node process: own process group, killed when flymc dies. Returns its pid.
pub fn spawn(cmd: Command, on_exit: OnExit) -> io::Result<u32> {
    send_job(cmd, on_exit, false)
}

/// Start `cmd` as the first process (pid 1) of a fresh PID and time namespace, in a session of
/// its own: what CRIU checkpoints as one self-contained tree. Otherwise like [`spawn`]: the
/// returned pid (in flymc's namespace) is flymc's child, killed when flymc dies; killing it ends
/// everything in its namespace, and its exit is reported only once all of that is gone.
pub fn spawn_in_namespaces(cmd: Command, on_exit: OnExit) -> io::Result<u32> {
    send_job(cmd, on_exit, true)
}

fn send_job(cmd: Command, on_exit: OnExit, namespaces: bool) -> io::Result<u32> {
    install_cleanup_handler();
    let (reply, rx) = mpsc::channel();
    registry()
        .spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(Job {
            cmd,
            on_exit,
            namespaces,
            reply,
        })
        .map_err(|_| io::Error::other("the process spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| io::Error::other("the process spawner thread is gone"))?
}

/// Run `cmd` to its end as a registered process started from the spawner thread (so Ctrl-C
/// kills it, and what it starts with CLONE_PARENT, like `criu restore --restore-sibling`,
/// becomes flymc's child). Returns how it ended.
pub fn run(cmd: Command) -> io::Result<String> {
    let (tx, rx) = mpsc::channel();
    spawn(
        cmd,
        Box::new(move |how| {
            let _ = tx.send(how);
        }),
    )?;
    rx.recv()
        .map_err(|_| io::Error::other("the process waiter thread is gone"))
}

/// [`run`] for at most `timeout`: a command that has not ended by then is killed with its
/// whole process group (what it started too) and `Ok(None)` returned. For commands a system
/// file names (setup checks), which must not hang a run.
pub fn run_bounded(cmd: Command, timeout: Duration) -> io::Result<Option<String>> {
    let (tx, rx) = mpsc::channel();
    let pid = spawn(
        cmd,
        Box::new(move |how| {
            let _ = tx.send(how);
        }),
    )?;
    match rx.recv_timeout(timeout) {
        Ok(how) => Ok(Some(how)),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            kill_and_wait(&[pid], Duration::from_secs(5))?;
            Ok(None)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(io::Error::other("the process waiter thread is gone"))
        }
    }
}

/// Take over `pid`, a child of flymc that flymc did not spawn itself (a process tree CRIU
/// restored next to itself): registered, reported and reaped like a spawned node process.
pub fn adopt(pid: u32, on_exit: OnExit) -> io::Result<()> {
    let mut st = lock();
    if st.shutting_down {
        drop(st);
        kill_group(pid);
        let mut status = 0;
        // SAFETY: reaps our own child.
        unsafe {
            libc::waitpid(pid as libc::pid_t, &mut status, 0);
        }
        return Err(io::Error::other("flymc is shutting down"));
    }
    st.procs.insert(pid, false);
    drop(st);
    super::janitor::process(pid);
    start_waiter(pid, on_exit)
}

fn start_waiter(pid: u32, on_exit: OnExit) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("flymc-wait-{pid}"))
        .spawn(move || wait_for(pid, on_exit))
        .map(|_| ())
        .inspect_err(|_| kill_group(pid))
}

/// On the spawner thread.
fn spawn_here(mut cmd: Command, on_exit: OnExit, namespaces: bool) -> io::Result<u32> {
    let parent = std::process::id() as libc::pid_t;
    cmd.process_group(0);
    // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::getppid() != parent {
                // flymc died between fork and prctl.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let ns = if namespaces {
        Some(super::namespaces::prepare(&mut cmd)?)
    } else {
        None
    };
    // Hold the registry while forking, so a concurrent cleanup cannot miss this process.
    let mut st = lock();
    if st.shutting_down {
        return Err(io::Error::other("flymc is shutting down"));
    }
    let spawned = cmd.spawn();
    let pid = match ns {
        None => {
            let child = spawned?;
            child.id() // never waited through std: the waiter thread below owns the pid
        }
        Some(ns) => ns.finish(spawned)?,
    };
    st.procs.insert(pid, false);
    drop(st);
    super::janitor::process(pid);
    start_waiter(pid, on_exit)?;
    Ok(pid)
}

fn kill_group(pid: u32) {
    // SAFETY: plain syscall; the group exists until its leader is reaped.
    unsafe {
        libc::killpg(pid as libc::pid_t, libc::SIGKILL);
    }
}

/// Waiter thread: see the exit, mark it, report it, reap it.
fn wait_for(pid: u32, on_exit: OnExit) {
    let how = loop {
        // SAFETY: zeroed siginfo is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            // SAFETY: waitid filled a SIGCHLD siginfo.
            let status = unsafe { info.si_status() };
            break match info.si_code {
                libc::CLD_EXITED => format!("exit status {status}"),
                libc::CLD_KILLED | libc::CLD_DUMPED => format!("killed by signal {status}"),
                _ => format!("ended ({status})"),
            };
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            break format!("cannot wait for it: {e}");
        }
    };
    lock().procs.insert(pid, true);
    registry().changed.notify_all();
    // Still a zombie (not reaped): its pid cannot name another process yet.
    super::janitor::process_gone(pid);
    on_exit(how);
    let mut status = 0;
    // SAFETY: reaps our own child.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, 0);
    }
    lock().procs.remove(&pid);
    registry().changed.notify_all();
}

/// SIGSTOP `pid`'s process group if `pid` is a live node process, and wait until the process
/// has stopped (or ended). Whether it was live. For [`super::silence`]: a stopped node opens
/// and closes no connection while flymc copies them.
pub(crate) fn stop_group(pid: u32) -> bool {
    let st = lock();
    if st.procs.get(&pid) != Some(&false) {
        return false;
    }
    // SAFETY: plain syscall; registered and not reaped, so the pid is still this group's.
    unsafe {
        libc::killpg(pid as libc::pid_t, libc::SIGSTOP);
    }
    drop(st);
    loop {
        // SAFETY: zeroed siginfo is a valid out-parameter for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // WNOWAIT: the waiter thread still sees (and reaps) the exit.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WSTOPPED | libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return true;
        }
    }
}

/// SIGKILL these processes (their groups) and wait until they are gone, at most `timeout`.
pub fn kill_and_wait(pids: &[u32], timeout: Duration) -> io::Result<()> {
    let mut st = lock();
    for pid in pids {
        if st.procs.get(pid) == Some(&false) {
            kill_group(*pid);
        }
    }
    let deadline = Instant::now() + timeout;
    while let Some(pid) = pids.iter().find(|p| st.procs.contains_key(p)) {
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::other(format!(
                "process {pid} did not end within {} ms of SIGKILL",
                timeout.as_millis()
            )));
        }
        st = registry()
            .changed
            .wait_timeout(st, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Ok(())
}

/// Remember a run directory, removed by [`cleanup_all`] if flymc is interrupted.
pub fn register_dir(dir: &Path) {
    lock().dirs.insert(dir.to_path_buf());
    super::janitor::dir(dir);
}

pub fn unregister_dir(dir: &Path) {
    lock().dirs.remove(dir);
    super::janitor::dir_gone(dir);
}

/// Node processes flymc started that have not ended yet.
pub fn live_processes() -> Vec<u32> {
    let mut v: Vec<u32> = lock()
        .procs
        .iter()
        .filter(|(_, exited)| !**exited)
        .map(|(p, _)| *p)
        .collect();
    v.sort_unstable();
    v
}

/// Kill every node process, wait for them (a few seconds at most), remove the run
/// directories, and refuse to start new processes from now on.
pub fn cleanup_all() {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let (pids, dirs) = {
        let mut st = lock();
        st.shutting_down = true;
        (
            st.procs.keys().copied().collect::<Vec<_>>(),
            st.dirs.drain().collect::<Vec<_>>(),
        )
    };
    let _ = kill_and_wait(&pids, Duration::from_secs(5));
    kill_unregistered_descendants();
    super::docker::cleanup_all();
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    super::rundirs::tidy_all();
    let (done, cv) = &CLEANED;
    *done.lock().unwrap_or_else(|p| p.into_inner()) = true;
    cv.notify_all();
}

/// Kill every process flymc started that it has no pid of. A node CRIU restores is flymc's
/// own child (`--restore-sibling`) but flymc learns its pid only when `criu restore` exits: a
/// cleanup that kills `criu restore` midway would otherwise leave that node running. Everything
/// below flymc goes but the janitor, which must outlive it.
fn kill_unregistered_descendants() {
    let me = std::process::id();
    let janitor = super::janitor::pid();
    let strays: Vec<u32> = crate::snapshot::used::tree(me)
        .into_iter()
        .filter(|&p| p != me && Some(p) != janitor)
        .collect();
    if !strays.is_empty() {
        tracing::debug!("flymc cleanup: killing unregistered processes {strays:?}");
        super::janitor::kill_and_await(&strays);
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal that asked flymc to stop (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static CLEANED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Was flymc interrupted (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT)? Its nodes then die under the
/// running exploration, which fails; the caller should not report that failure but say what
/// was explored and exit with [`exit_code`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The signal that interrupted flymc, if one did.
pub fn interrupted_by() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status after signal `signal`: 128 + its number (130 for SIGINT, 143 for SIGTERM),
/// as shells report a process the signal ended.
pub fn exit_code(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// The signal's name, for messages.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

static REPORTED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// How long the signal handler waits for the main thread to say what it explored before it
/// exits by itself.
const REPORT_WAIT: Duration = Duration::from_secs(10);

/// Signals this soon after the first are the same request, delivered again.
const SAME_REQUEST: Duration = Duration::from_secs(1);

/// After an interruption: the main thread has printed its summary and is about to exit with
/// [`exit_code`] itself.
pub fn interruption_reported() {
    let (done, cv) = &REPORTED;
    *done.lock().unwrap_or_else(|p| p.into_inner()) = true;
    cv.notify_all();
}

/// Block until [`cleanup_all`] has finished.
pub fn wait_for_cleanup() {
    let (done, cv) = &CLEANED;
    let mut d = done.lock().unwrap_or_else(|p| p.into_inner());
    while !*d {
        d = cv.wait(d).unwrap_or_else(|p| p.into_inner());
    }
}

/// Where the signal handler writes the number of the signal it got.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: libc::c_int) {
    // The interrupted code may be about to read errno: leave it as it was.
    let errno = nix::errno::Errno::last_raw();
    let b = signal as u8;
    // SAFETY: write(2) is async-signal-safe; the pipe's write end lives as long as the process.
    unsafe {
        libc::write(
            SIGNAL_PIPE.load(Ordering::Relaxed),
            (&b as *const u8).cast(),
            1,
        );
    }
    nix::errno::Errno::set_raw(errno);
}

/// On SIGINT (Ctrl-C), SIGTERM, SIGHUP or SIGQUIT: [`cleanup_all`], then give the main thread
/// time to print what it explored and exit with 128 + the signal's number (130, 143, 129, 131);
/// if it does not say it has within a while, exit with that status from here. A second
/// signal exits at once, unless it comes within a second of the first (the same request
/// delivered twice, as `timeout` does). Installed by the first node process flymc starts; call it earlier to
/// own the signals from the start.
pub fn install_cleanup_handler() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if let Err(e) = install_signals() {
            tracing::warn!(
                "flymc cleanup: cannot handle signals ({e}); Ctrl-C may leave nodes behind"
            );
        }
    });
}

fn install_signals() -> io::Result<()> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)?;
    // The write end stays open for the life of the process (the handler may run any time).
    SIGNAL_PIPE.store(std::os::fd::IntoRawFd::into_raw_fd(write), Ordering::SeqCst);
    let mut read = std::fs::File::from(read);
    std::thread::Builder::new()
        .name("flymc-signals".into())
        .spawn(move || {
            use std::io::Read;
            let mut b = [0u8; 1];
            let mut first_at: Option<std::time::Instant> = None;
            while read.read_exact(&mut b).is_ok() {
                let signal = i32::from(b[0]);
                if SIGNAL
                    .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
                {
                    // The same request delivered twice (`timeout` signals the command and
                    // then its whole process group) is no second request.
                    if first_at.is_some_and(|t| t.elapsed() < SAME_REQUEST) {
                        continue;
                    }
                    // Asked again: stop now.
                    let first = SIGNAL.load(Ordering::SeqCst);
                    std::process::exit(exit_code(first).into());
                }
                first_at = Some(std::time::Instant::now());
                // Clean up and wait on another thread, so a second signal is heard meanwhile.
                let cleaner = std::thread::Builder::new()
                    .name("flymc-cleanup".into())
                    .spawn(move || {
                        cleanup_all();
                        let (done, cv) = &REPORTED;
                        let d = done.lock().unwrap_or_else(|p| p.into_inner());
                        let (d, _) = cv
                            .wait_timeout_while(d, REPORT_WAIT, |d| !*d)
                            .unwrap_or_else(|p| p.into_inner());
                        if !*d {
                            std::process::exit(exit_code(signal).into());
                        }
                    });
                if cleaner.is_err() {
                    // No thread to spare: clean up here, and exit without a summary.
                    cleanup_all();
                    std::process::exit(exit_code(signal).into());
                }
            }
        })?;
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        // SAFETY: the handler only calls write(2), which is async-signal-safe.
        unsafe { sigaction(s, &action) }.map_err(io::Error::from)?;
    }
    Ok(())
}
