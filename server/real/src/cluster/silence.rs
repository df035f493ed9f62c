//! Crash silence: a crashed node's connections tell its peers nothing until flymc says so.
//!
//! SIGKILL closes a process's sockets, and the kernel then sends each peer a FIN (or a reset,
//! when data was left unread): the peers learn of the crash at once, on the kernel's schedule,
//! not flymc's. So before a crash the local backend stops the node's process group (SIGSTOP),
//! takes a copy of each of its TCP connections to another node of the cluster with
//! `pidfd_getfd`, and only then kills the group. While a copy is open the socket
//! lives on in flymc, so the kernel sends nothing: the peer's end stays established, and data
//! it sends is acknowledged into the copy's buffer, as to a machine that went silent.
//!
//! A copy is closed when flymc tells that peer of the crash ([`Silence::release`]: it enabled
//! the peer's peer-failure timer or its `crashed` notice), with a plain close, so the peer sees
//! exactly what the crash would have shown it (a FIN, or a reset if the node left data
//! unread), only later. The rest are closed when the cluster stops ([`Silence::reset_all`])
//! with SO_LINGER 0: the peers are dead by then, and a reset leaves no TIME_WAIT behind on
//! addresses the next run (or a restored snapshot) takes again. Dropping a [`Silence`] does
//! the same, so no copy outlives its backend.
//!
//! Only connections whose other end a node of the cluster holds are copied (matched through
//! the node's TCP table, `/proc/PID/net/tcp{,6}`): not listening sockets, not the hook's
//! connections to flymc's event server, not connections between two crashed nodes.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use flymc_model::NodeId;

use super::procs;

/// A connection of a crashed node kept open by flymc.
struct Held {
    crashed: NodeId,
    /// The node holding the other end.
    peer: NodeId,
    fd: OwnedFd,
}

/// The copies of crashed nodes' connections a backend holds.
#[derive(Default)]
pub(crate) struct Silence {
    held: Vec<Held>,
}

impl Silence {
    /// Stop `pid`'s process group (node `crashed`), and hold a copy of each of its
    /// connections to the nodes `others` (node, process group) hold the other end of. The
    /// group stays stopped: the caller kills it next. Returns how many copies it took.
    pub fn hold(
        &mut self,
        crashed: NodeId,
        pid: u32,
        others: &[(NodeId, u32)],
    ) -> io::Result<usize> {
        if !procs::stop_group(pid) {
            return Ok(0);
        }
        let table = tcp_table(pid)?;
        let owners: HashMap<u64, NodeId> = others
            .iter()
            .flat_map(|&(node, group)| {
                group_members(group)
                    .into_iter()
                    .flat_map(|p| sockets(p).into_iter().map(|(_, inode)| inode))
                    .map(move |inode| (inode, node))
            })
            .collect();
        let mut took = 0;
        for member in group_members(pid) {
            let mut pidfd = None;
            for (fd, inode) in sockets(member) {
                let Some(peer) = table.peer_inode(inode).and_then(|i| owners.get(&i)) else {
                    continue;
                };
                if pidfd.is_none() {
                    pidfd = Some(pidfd_open(member)?);
                }
                let copy = pidfd_getfd(pidfd.as_ref().expect("opened above"), fd)?;
                self.held.push(Held {
                    crashed,
                    peer: *peer,
                    fd: copy,
                });
                took += 1;
            }
        }
        Ok(took)
    }

    /// `peer` has been told of `crashed`'s crash: close the copies of their connections, as the
    /// crash would have (a FIN, or a reset if data was left unread). Returns how many.
    pub fn release(&mut self, crashed: NodeId, peer: NodeId) -> usize {
        let before = self.held.len();
        self.held
            .retain(|h| !(h.crashed == crashed && h.peer == peer));
        before - self.held.len()
    }

    /// Close every copy with a reset (SO_LINGER 0): the cluster is stopping.
    pub fn reset_all(&mut self) {
        for h in self.held.drain(..) {
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: a valid option value of its size on a socket we own; a failure only
            // leaves the plain close below.
            unsafe {
                libc::setsockopt(
                    h.fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                );
            }
        }
    }
}

impl Drop for Silence {
    fn drop(&mut self) {
        self.reset_all();
    }
}

fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; pidfds are close-on-exec.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A copy of descriptor `fd` of the process `pidfd` names (Linux >= 5.6; flymc may ptrace its
/// own children). The copy is close-on-exec.
fn pidfd_getfd(pidfd: &OwnedFd, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall on a pidfd we own.
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(copy as RawFd) })
}

/// The processes of process group `group` (the group's leader first, if alive).
fn group_members(group: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![group];
    };
    let mut members: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| process_group(pid) == Some(group))
        .collect();
    members.sort_unstable_by_key(|&p| (p != group, p));
    members
}

/// The process group of `pid`, from `/proc/PID/stat` (fields after the command's `)`:
/// state, ppid, pgrp).
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// `pid`'s socket descriptors: (descriptor, socket inode).
fn sockets(pid: u32) -> Vec<(RawFd, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let fd: RawFd = e.file_name().to_str()?.parse().ok()?;
        let link = std::fs::read_link(e.path()).ok()?;
        let inode = link
            .to_str()?
            .strip_prefix("socket:[")?
            .strip_suffix(']')?
            .parse()
            .ok()?;
        Some((fd, inode))
    })
    .collect()
}

/// One established connection of a TCP table.
#[derive(Debug, PartialEq)]
struct Row {
    local: SocketAddr,
    remote: SocketAddr,
    inode: u64,
}

/// The established TCP connections of a network namespace.
#[derive(Debug, Default)]
struct Table(Vec<Row>);

impl Table {
    /// The inode of the socket at the other end of the connection `inode` is an end of.
    fn peer_inode(&self, inode: u64) -> Option<u64> {
        let mine = self.0.iter().find(|r| r.inode == inode)?;
        self.0
            .iter()
            .find(|r| r.local == mine.remote && r.remote == mine.local && r.inode != 0)
            .map(|r| r.inode)
    }

    fn parse(text: &str, into: &mut Table) {
        into.0.extend(text.lines().skip(1).filter_map(parse_row));
    }
}

/// The established connections in `pid`'s network namespace (IPv4 and IPv6).
fn tcp_table(pid: u32) -> io::Result<Table> {
    let mut table = Table::default();
    for file in ["tcp", "tcp6"] {
        match std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) {
            Ok(text) => Table::parse(&text, &mut table),
            // No IPv6 in this kernel.
            Err(e) if e.kind() == io::ErrorKind::NotFound && file == "tcp6" => {}
            Err(e) => return Err(e),
        }
    }
    Ok(table)
}

/// A line of `/proc/net/tcp{,6}` if it is an established connection (state 01):
/// `sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...`.
fn parse_row(line: &str) -> Option<Row> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.get(3) != Some(&"01") {
        return None;
    }
    Some(Row {
        local: parse_addr(f.get(1)?)?,
        remote: parse_addr(f.get(2)?)?,
        inode: f.get(9)?.parse().ok()?,
    })
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): the address as the kernel
/// prints it, in 32-bit words of host byte order. IPv4-mapped IPv6 addresses become IPv4, so
/// a Java socket (IPv6) and its peer compare equal however each was opened.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    let (addr, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<[u8; 4]> = (0..addr.len() / 8)
        .map(|i| u32::from_str_radix(addr.get(i * 8..i * 8 + 8)?, 16).ok())
        .map(|w| w.map(u32::to_ne_bytes))
        .collect::<Option<_>>()?;
    let ip = match (addr.len(), words.as_slice()) {
        (8, [w]) => IpAddr::V4(Ipv4Addr::from(*w)),
        (32, _) => {
            let bytes: [u8; 16] = words.concat().try_into().ok()?;
            Ipv6Addr::from(bytes).to_canonical()
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::Duration;

    use super::*;

    #[test]
    fn tcp_table_rows_parse_to_canonical_addresses() {
        let v4 = "  0: 0200007F:1F90 0300007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 20 4 30 10 -1";
        let row = parse_row(v4).unwrap();
        assert_eq!(row.local, "127.0.0.2:8080".parse().unwrap());
        assert_eq!(row.remote, "127.0.0.3:50000".parse().unwrap());
        assert_eq!(row.inode, 4242);
        // ::ffff:127.0.0.2 as Linux prints it on little-endian machines.
        let v6 = "  1: 0000000000000000FFFF00000200007F:1F90 0000000000000000FFFF00000300007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4343 1";
        if cfg!(target_endian = "little") {
            let row = parse_row(v6).unwrap();
            assert_eq!(row.local, "127.0.0.2:8080".parse().unwrap());
            assert_eq!(row.remote, "127.0.0.3:50000".parse().unwrap());
        }
        let listening = v4.replacen(" 01 ", " 0A ", 1);
        assert_eq!(parse_row(&listening), None);
        let table = Table(vec![
            row,
            Row {
                local: "127.0.0.3:50000".parse().unwrap(),
                remote: "127.0.0.2:8080".parse().unwrap(),
                inode: 77,
            },
        ]);
        assert_eq!(table.peer_inode(4242), Some(77));
        assert_eq!(table.peer_inode(77), Some(4242));
        assert_eq!(table.peer_inode(5), None);
    }

    /// The state of the connection whose local end is the socket `inode`.
    fn state_of(inode: u64) -> Option<String> {
        ["tcp", "tcp6"].iter().find_map(|f| {
            let text = std::fs::read_to_string(format!("/proc/self/net/{f}")).ok()?;
            text.lines().skip(1).find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.get(9)?.parse::<u64>().ok()? == inode).then(|| f[3].to_string())
            })
        })
    }

    fn held_by_us(inode: u64) -> bool {
        sockets(std::process::id()).iter().any(|&(_, i)| i == inode)
    }

    /// Two registered processes joined by one loopback connection: a "crashed" one that
    /// connected, and a peer that holds the accepted end as descriptor 3. Returns their pids
    /// and the peer end's socket inode.
    fn two_connected_processes() -> (u32, u32, u64) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut a = Command::new("bash");
        a.arg("-c")
            .arg(format!("exec 3<>/dev/tcp/127.0.0.1/{port}; exec sleep 600"));
        let a = procs::spawn(a, Box::new(|_| {})).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let peer_end = accepted.as_raw_fd();
        let mut b = Command::new("sleep");
        b.arg("600");
        // SAFETY: dup2 and fcntl only, between fork and exec. The accepted end may itself be
        // descriptor 3, where dup2 does nothing and leaves it close-on-exec: clear that flag.
        unsafe {
            b.pre_exec(move || {
                if libc::dup2(peer_end, 3) == -1 || libc::fcntl(3, libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let b = procs::spawn(b, Box::new(|_| {})).unwrap();
        let inode = sockets(b)
            .into_iter()
            .find(|&(fd, _)| fd == 3)
            .map(|(_, i)| i)
            .unwrap();
        drop(accepted);
        (a, b, inode)
    }

    #[test]
    fn a_killed_process_held_silent_tells_its_peer_nothing_until_released() {
        let (a, b, peer_end) = two_connected_processes();
        let mut silence = Silence::default();
        assert_eq!(silence.hold(0, a, &[(1, b)]).unwrap(), 1);
        let copy = silence.held[0].fd.as_raw_fd();
        let inode = sockets(std::process::id())
            .into_iter()
            .find(|&(fd, _)| fd == copy)
            .map(|(_, i)| i)
            .unwrap();
        procs::kill_and_wait(&[a], Duration::from_secs(10)).unwrap();
        // The killed end lives on in the copy: the peer's end is still established.
        assert_eq!(state_of(peer_end).as_deref(), Some("01"));
        // Told of the crash of another node, or by another node: nothing changes.
        assert_eq!(silence.release(0, 2) + silence.release(1, 1), 0);
        assert_eq!(silence.release(0, 1), 1);
        assert!(silence.held.is_empty());
        assert!(!held_by_us(inode), "the copy is closed");
        // The FIN the crash would have sent: the peer's end waits for its own close.
        assert_eq!(state_of(peer_end).as_deref(), Some("08"), "CLOSE_WAIT");
        procs::kill_and_wait(&[b], Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn copies_not_released_are_reset_when_the_holder_goes() {
        let (a, b, peer_end) = two_connected_processes();
        let mut silence = Silence::default();
        assert_eq!(silence.hold(3, a, &[(4, b)]).unwrap(), 1);
        procs::kill_and_wait(&[a], Duration::from_secs(10)).unwrap();
        let copy = silence.held[0].fd.as_raw_fd();
        let inode = sockets(std::process::id())
            .into_iter()
            .find(|&(fd, _)| fd == copy)
            .map(|(_, i)| i)
            .unwrap();
        drop(silence);
        assert!(!held_by_us(inode), "the copy is closed");
        // A reset: the peer's end is closed outright (gone from the table), not waiting in
        // CLOSE_WAIT as after a FIN.
        assert_eq!(state_of(peer_end), None);
        procs::kill_and_wait(&[b], Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn a_process_with_no_connection_to_a_node_gives_no_copy() {
        let (a, b, _) = two_connected_processes();
        let mut silence = Silence::default();
        // Its only connection's other end belongs to no node listed.
        assert_eq!(silence.hold(0, a, &[]).unwrap(), 0);
        procs::kill_and_wait(&[a, b], Duration::from_secs(10)).unwrap();
    }
}
