//! What cleans up after a flymc that could not: a process forked at the very start of `main`
//! (while flymc has one thread, so the fork is safe), told over a socket about every process
//! flymc starts and every directory it creates, until flymc ends.
//!
//! When flymc ends in any way — SIGKILL included, mid-snapshot included — the socket closes.
//! Whatever is still registered then is what flymc did not clean up itself: the janitor kills
//! the process groups (a `criu dump`'s helpers are in criu's group, where the kernel's death
//! signal reaches only criu itself), waits until they are gone, and removes the directories
//! (run directories, snapshot images, CRIU's work directories). A flymc that ended normally has
//! unregistered everything, so the janitor finds nothing to do and exits at once.
//!
//! Without [`install`] (the library used from a test program) nothing is sent, and what a
//! SIGKILLed flymc leaves is removed by the next run's sweep ([`super::rundirs`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// flymc's end of the socket; absent when no janitor runs.
static SOCKET: OnceLock<OwnedFd> = OnceLock::new();
/// The janitor's pid: the one child of flymc its own cleanup must leave running.
static PID: OnceLock<u32> = OnceLock::new();

/// How long the janitor waits for the killed processes to be gone before it removes the
/// directories they may still be writing.
const GONE_WAIT: Duration = Duration::from_secs(10);

/// One message per record: a tag byte and its argument.
const PROCESS: u8 = b'p';
const PROCESS_GONE: u8 = b'x';
const DIR: u8 = b'd';
const DIR_GONE: u8 = b'u';

/// Fork the janitor. Call first thing in `main`, before any thread is started (the child goes
/// on as an ordinary single-threaded process). Does nothing on a second call; a failure only
/// means no janitor (the next run's sweep remains).
pub fn install() {
    if SOCKET.get().is_some() {
        return;
    }
    let mut fds = [0 as RawFd; 2];
    // SAFETY: plain syscall into a two-element array; close-on-exec, so no node inherits it.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return;
    }
    // SAFETY: socketpair returned two fresh descriptors we own.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: flymc has a single thread here (the caller's contract), so the child may run
    // ordinary code.
    match unsafe { libc::fork() } {
        0 => {
            drop(ours);
            janitor(theirs)
        }
        pid if pid > 0 => {
            drop(theirs);
            let _ = SOCKET.set(ours);
            let _ = PID.set(pid as u32);
        }
        _ => {}
    }
}

/// A process flymc started (its own process group).
pub(crate) fn process(pid: u32) {
    send(PROCESS, pid.to_string().as_bytes());
}

/// It ended (not yet reaped, so its pid cannot have been reused).
pub(crate) fn process_gone(pid: u32) {
    send(PROCESS_GONE, pid.to_string().as_bytes());
}

/// A directory flymc created and removes when done with it.
pub(crate) fn dir(path: &Path) {
    send(DIR, path.as_os_str().as_encoded_bytes());
}

/// flymc removed it, or keeps it on purpose.
pub(crate) fn dir_gone(path: &Path) {
    send(DIR_GONE, path.as_os_str().as_encoded_bytes());
}

fn send(tag: u8, arg: &[u8]) {
    let Some(fd) = SOCKET.get() else {
        return;
    };
    let mut msg = Vec::with_capacity(arg.len() + 1);
    msg.push(tag);
    msg.extend_from_slice(arg);
    // SAFETY: a valid buffer; MSG_NOSIGNAL: a janitor that is gone is no reason to die of
    // SIGPIPE. A failed send loses only the janitor's help.
    unsafe {
        libc::send(
            fd.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            libc::MSG_NOSIGNAL,
        );
    }
}

/// The child: detach from flymc's terminal and output, keep the records until the socket
/// closes, then clean up what is left and exit.
fn janitor(socket: OwnedFd) -> ! {
    detach(socket.as_raw_fd());
    let (pids, dirs) = records(&socket);
    drop(socket);
    clean(&pids, &dirs);
    // SAFETY: ends this process without running the parent's exit handlers a second time.
    unsafe { libc::_exit(0) }
}

/// Own session (Ctrl-C at flymc's terminal is for flymc, which cleans up itself), signals that
/// ask a process to stop ignored, the standard streams on /dev/null (a caller waiting for the
/// end of flymc's output must not wait for the janitor), every other inherited descriptor closed.
fn detach(keep: RawFd) {
    // SAFETY: plain syscalls on this process's own state, with valid arguments.
    unsafe {
        libc::setsid();
        libc::prctl(
            libc::PR_SET_NAME,
            c"flymc-janitor".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
        for s in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(s, libc::SIG_IGN);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for s in 0..3 {
                libc::dup2(null, s);
            }
            if null > 2 {
                libc::close(null);
            }
        }
        if keep > 3 {
            libc::close_range(3, (keep - 1) as libc::c_uint, 0);
        }
        libc::close_range((keep + 1) as libc::c_uint, libc::c_uint::MAX, 0);
    }
}

/// Read records until flymc's end closes: what is registered then.
fn records(socket: &OwnedFd) -> (Vec<u32>, Vec<PathBuf>) {
    let (mut pids, mut dirs) = (Vec::<u32>::new(), Vec::<PathBuf>::new());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: a valid buffer of its length.
        let n = unsafe { libc::recv(socket.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        let Some((&tag, arg)) = buf[..n as usize].split_first() else {
            break; // end of stream: flymc is gone
        };
        let pid = || {
            std::str::from_utf8(arg)
                .ok()
                .and_then(|s| s.parse::<u32>().ok())
        };
        let path = || {
            // SAFETY: the bytes came from `as_encoded_bytes` of a path in the same program.
            PathBuf::from(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(arg) })
        };
        match tag {
            PROCESS => pids.extend(pid()),
            PROCESS_GONE => {
                let p = pid();
                pids.retain(|q| Some(*q) != p);
            }
            DIR => dirs.push(path()),
            DIR_GONE => {
                let p = path();
                dirs.retain(|d| *d != p);
            }
            _ => {}
        }
    }
    (pids, dirs)
}

/// The janitor's pid, if one runs.
pub(crate) fn pid() -> Option<u32> {
    PID.get().copied()
}

fn clean(pids: &[u32], dirs: &[PathBuf]) {
    kill_and_await(pids);
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// SIGKILL each process and its group, and wait (at most [`GONE_WAIT`]) until all have ended.
pub(crate) fn kill_and_await(pids: &[u32]) {
    // A pidfd per process first (the pid cannot be reused while flymc's exit leaves it a
    // zombie for init to reap), to wait for its end without polling.
    let fds: Vec<OwnedFd> = pids
        .iter()
        .filter_map(|&pid| {
            // SAFETY: plain syscall; a non-negative result is a new descriptor we own.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
            (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
        })
        .collect();
    for &pid in pids {
        // SAFETY: plain syscalls. Each registered process leads its own group (a node, or
        // CRIU with the helpers it forked), which the pid names until the process is reaped.
        unsafe {
            libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    // No directory is removed while a process may still write into it.
    let deadline = Instant::now() + GONE_WAIT;
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !polls.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        // SAFETY: valid pollfds of descriptors we own.
        let n = unsafe {
            libc::poll(
                polls.as_mut_ptr(),
                polls.len() as libc::nfds_t,
                left.as_millis() as i32,
            )
        };
        if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
        polls.retain(|p| p.revents == 0);
    }
}
