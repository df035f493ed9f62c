package org.flymc.hook;

import java.io.FileDescriptor;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The quiet check against the kernel's accept queue, in a plain JVM (no agent, no flymc): run by
 * hooks/java/tests/quiet.rs. Exits 1 with one line per broken expectation.
 */
public final class QuietProbe {
    private QuietProbe() {}

    private static int failed;

    private static void expect(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAILED: " + what);
            failed++;
        }
    }

    /** A started thread accepting on {@code s} through the hook; its socket or error goes to {@code into}. */
    private static Thread acceptor(ServerSocket s, AtomicReference<Object> into) {
        Thread t = new Thread(() -> {
            try {
                into.set(Hook.naccept(s));
            } catch (Exception e) {
                into.set(e);
            }
        }, "acceptor");
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        Backlog.init(null);
        // Only the probe's own threads count (a system's hooks.toml names the JVM's to ignore).
        Quiescence.ignoreThreads.add(java.util.regex.Pattern.compile("^(?!stalled-acceptor$|acceptor$)"));
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Object impl = Backlog.impl(ss);
            FileDescriptor fd = impl != null ? Backlog.fd(impl) : null;
            expect(fd != null, "the listener's descriptor is readable");
            // A thread in an accept's rest that the scheduler has not run since a peer
            // connected: in the hook's books it rests, while the kernel holds a connection for it.
            CountDownLatch in = new CountDownLatch(1);
            Thread stalled = new Thread(() -> {
                Rests.enter(Rests.NET, fd);
                in.countDown();
                LockSupport.park();
            }, "stalled-acceptor");
            stalled.setDaemon(true);
            stalled.start();
            in.await();
            while (stalled.getState() != Thread.State.WAITING) {
                Thread.onSpinWait();
            }
            String before = Quiescence.busyThread();
            expect(before == null, "a listener with nothing queued rests (busy: " + before + ")");
            try (Socket peer = new Socket(ss.getInetAddress(), ss.getLocalPort())) {
                String b = Quiescence.busyThread();
                expect(b != null && b.startsWith("stalled-acceptor"),
                    "a queued connection keeps its acceptor busy (busy: " + b + ")");
            }
            Rests.resting.remove(stalled);
            // The real accept: waits in the rest, takes the connection outside it.
            AtomicReference<Object> got = new AtomicReference<>();
            Thread acceptor = acceptor(ss, got);
            try (Socket peer = new Socket(ss.getInetAddress(), ss.getLocalPort())) {
                acceptor.join();
                expect(got.get() instanceof Socket, "naccept returns the connection (got " + got.get() + ")");
                expect(!Rests.resting.containsKey(acceptor), "the acceptor left its rest");
                if (got.get() instanceof Socket) {
                    ((Socket) got.get()).close();
                }
            }
        }
        // A close from another thread ends the wait at once, as it ends a plain accept.
        ServerSocket closing = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        AtomicReference<Object> ended = new AtomicReference<>();
        Thread waiter = acceptor(closing, ended);
        while (!Rests.resting.containsKey(waiter) && waiter.isAlive()) {
            Thread.onSpinWait();
        }
        closing.close();
        waiter.join(10_000);
        expect(!waiter.isAlive(), "a close wakes the acceptor (still waiting after 10 s)");
        expect(ended.get() instanceof java.net.SocketException,
            "the acceptor gets the close's SocketException (got " + ended.get() + ")");
        if (failed > 0) {
            System.exit(1);
        }
        System.out.println("ok");
    }
}
