//! Starting a node as pid 1 of a fresh PID and time namespace while keeping it flymc's child.
//!
//! The forked child unshares the namespaces (they apply to its children only), then clones with
//! CLONE_PARENT: the clone is the namespace's first process and, like CRIU's
//! `--restore-sibling`, a child of flymc's spawner thread, so the death signal and the waiter
//! thread work as for any node. The intermediate child reports the clone's pid on a pipe and
//! exits; the clone starts a session of its own (a tree CRIU can dump without `--shell-job`)
//! and goes on to exec the program. Two restores of one image need two PID namespaces (a
//! restore reuses the dumped pids); CRIU recreates them because the dumped root is a
//! namespace's first process. The time namespace lets CRIU restore the monotonic clocks.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// The parent's side of one namespaced spawn.
pub(super) struct Pending {
    /// Read end of the pipe the intermediate child writes the clone's pid to.
    report: OwnedFd,
    /// Write end, closed here once the child has forked.
    write: OwnedFd,
    /// A pidfd of flymc, so the clone can tell whether flymc died before it set its death
    /// signal (its parent is outside its PID namespace: `getppid` says 0).
    _flymc: OwnedFd,
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: plain syscall into a two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn pidfd_self() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; pidfds are close-on-exec.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Arrange for `cmd` to run in fresh namespaces (call after its other `pre_exec` hooks).
pub(super) fn prepare(cmd: &mut Command) -> io::Result<Pending> {
    let (report, write) = pipe()?;
    let flymc = pidfd_self()?;
    let (w, f) = (write.as_raw_fd(), flymc.as_raw_fd());
    // SAFETY: only async-signal-safe syscalls between fork and exec.
    unsafe {
        cmd.pre_exec(move || enter(w, f));
    }
    Ok(Pending {
        report,
        write,
        _flymc: flymc,
    })
}

/// In the forked child. Returns only in the clone (or with an error in the child).
fn enter(report: RawFd, flymc: RawFd) -> io::Result<()> {
    let fail = || Err(io::Error::last_os_error());
    // SAFETY: raw syscalls on a single-threaded child; the clone gets a copy-on-write copy of
    // this stack, as with fork.
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID | libc::CLONE_NEWTIME) != 0 {
            return fail();
        }
        let pid = libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_PARENT | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        );
        if pid < 0 {
            return fail();
        }
        if pid > 0 {
            let p = pid as i32;
            let ok = libc::write(report, (&p as *const i32).cast(), 4) == 4;
            libc::_exit(if ok { 0 } else { 1 });
        }
        // The namespace's pid 1, flymc's child.
        if libc::setsid() < 0 {
            return fail();
        }
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return fail();
        }
        let mut p = libc::pollfd {
            fd: flymc,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut p, 1, 0) != 0 {
            // flymc died before the death signal was set.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

impl Pending {
    /// After `Command::spawn`: reap the intermediate child and return the clone's pid.
    pub(super) fn finish(self, spawned: io::Result<Child>) -> io::Result<u32> {
        drop(self.write);
        let mut buf = [0u8; 4];
        // SAFETY: reads into a local buffer from a descriptor we own.
        let n = unsafe { libc::read(self.report.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
        let clone = (n == 4).then(|| i32::from_ne_bytes(buf));
        match spawned {
            Ok(child) => {
                reap(child.id() as libc::pid_t);
                clone.map(|p| p as u32).ok_or_else(|| {
                    io::Error::other("the namespace's first process did not report its pid")
                })
            }
            Err(e) => {
                // std reaped the intermediate child; reap a clone whose exec failed.
                if let Some(p) = clone {
                    reap(p);
                }
                Err(explain(e))
            }
        }
    }
}

fn reap(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: reaps our own child.
    unsafe {
        libc::waitpid(pid, &mut status, 0);
    }
}

fn explain(e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::EPERM) => io::Error::other(format!(
            "{e}: new PID and time namespaces need root (CAP_SYS_ADMIN)"
        )),
        Some(libc::EINVAL) => io::Error::other(format!(
            "{e}: this kernel has no time namespaces (Linux 5.6 or later with CONFIG_TIME_NS)"
        )),
        _ => e,
    }
}
