package org.flymc.hook;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The hook's runtime as the rewritten bytecode sees it: the node's identity and configuration,
 * the blocking bridges every wait in the instrumented classes goes through, and the entry points
 * of configured points. The work is done by one class per job:
 *
 * <ul>
 * <li>{@link Points}: configured points report messages, timers, disk writes to flymc and hold
 * them until flymc enables them ({@link Events} reports, {@link Orders} hands each enabled
 * event to what waits for it);
 * <li>{@link Rests} and {@link Quiescence}: flymc must learn when a node has finished
 * processing an enabled event, in a JVM with dozens of threads. Every blocking call in the
 * instrumented classes (queue take/poll, Object.wait, CountDownLatch.await, sleep, a selector's
 * select, a server socket's accept, a pool's awaitTermination, a thread's join) goes through
 * here, so the hook knows which threads rest and whether what they wait for has arrived; the
 * remaining threads are judged by their state and stack. The node is done when every thread
 * rests and nothing it waits for is available: at once when every thread rests in the hook's own
 * waits (their conditions are read, not guessed from a thread state that lags a wake-up) and
 * nothing entered or left a wait meanwhile; otherwise twice in a row with no hook activity
 * between;
 * <li>{@link Exceptions}: what `exception` points saw, for the state.
 * </ul>
 */
public final class Hook {
    static Map<String, Object> config;
    static List<Point> points = new ArrayList<>();
    /** Replaced by a fresh one after a pause (Agent.pause). */
    static volatile Net net;
    static int node, nodes, incarnation;
    static final Map<String, Object> captures = new ConcurrentHashMap<>();
    /** What `record` points appended (e.g. exceptions that escaped a thread), in order. */
    static final List<String> recorded = java.util.Collections.synchronizedList(new ArrayList<>());
    /** The enabled event in progress: the parent of everything reported now (null at startup). */
    static volatile String current;
    /** Virtual clock for the configured clock calls, advanced only by fired timers. */
    static final AtomicLong vclock = new AtomicLong(1_000_000_000L);
    /** Waits shorter than this end by themselves: the thread counts as busy. */
    static final long SHORT_MS = 1000;

    static void log(String s) {
        System.err.println("flymc-hook n" + node + ": " + s);
        System.err.flush();
    }

    // ---------------------------------------------------------------- generic blocking bridges

    // Queues are only asked through their blocking methods here: some (ZooKeeper's
    // CircularBlockingQueue) do not implement the others.

    public static Object qtake(BlockingQueue<Object> q) throws InterruptedException {
        Rests.enter(Rests.QUEUE, q);
        try {
            return q.take();
        } finally {
            Rests.leave();
        }
    }

    public static Object qpoll(BlockingQueue<Object> q, long t, TimeUnit u) throws InterruptedException {
        if (t <= 0 || u.toMillis(t) < SHORT_MS) {
            return q.poll(t, u);
        }
        Rests.enter(Rests.QUEUE, q);
        try {
            return q.poll(t, u);
        } finally {
            Rests.leave();
        }
    }

    public static boolean qoffer(BlockingQueue<Object> q, Object x) {
        Rests.wakeOn(q);
        boolean ok = q.offer(x);
        Rests.inserted(q);
        return ok;
    }

    public static boolean qadd(BlockingQueue<Object> q, Object x) {
        Rests.wakeOn(q);
        boolean ok = q.add(x);
        Rests.inserted(q);
        return ok;
    }

    public static void qput(BlockingQueue<Object> q, Object x) throws InterruptedException {
        Rests.wakeOn(q);
        q.put(x);
        Rests.inserted(q);
    }

    public static void owait(Object o) throws InterruptedException {
        Rests.enter(Rests.MONITOR, o);
        try {
            o.wait();
        } finally {
            Rests.leave();
        }
    }

    public static void owait(Object o, long ms) throws InterruptedException {
        if (ms > 0 && ms < SHORT_MS) {
            o.wait(ms);
            return;
        }
        Rests.enter(Rests.MONITOR, o);
        try {
            o.wait(ms);
        } finally {
            Rests.leave();
        }
    }

    /**
     * {@code t.join()}: rests until {@code t} has ended. Rewritten whatever the static type (a
     * {@code QuorumPeer} is a Thread); a {@code join()} of a class that is not a Thread is called
     * as it was.
     */
    public static void tjoin(Object t) throws Throwable {
        if (!(t instanceof Thread)) {
            invokeOriginal(t, "join", new Class<?>[0]);
            return;
        }
        Rests.enter(Rests.JOIN, t);
        try {
            ((Thread) t).join();
        } finally {
            Rests.leave();
        }
    }

    public static void tjoin(Object t, long ms) throws Throwable {
        if (!(t instanceof Thread)) {
            invokeOriginal(t, "join", new Class<?>[] {long.class}, ms);
            return;
        }
        if (ms > 0 && ms < SHORT_MS) {
            ((Thread) t).join(ms);
            return;
        }
        Rests.enter(Rests.JOIN, t);
        try {
            ((Thread) t).join(ms);
        } finally {
            Rests.leave();
        }
    }

    private static void invokeOriginal(Object recv, String name, Class<?>[] types, Object... args) throws Throwable {
        try {
            Points.method(recv.getClass(), name, types).invoke(recv, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }

    public static void onotify(Object o) {
        Rests.wakeOn(o);
        o.notify();
    }

    public static void onotifyAll(Object o) {
        Rests.wakeOn(o);
        o.notifyAll();
    }

    public static void lawait(CountDownLatch l) throws InterruptedException {
        if (l.getCount() == 0) {
            return;
        }
        Rests.enter(Rests.LATCH, l);
        try {
            l.await();
        } finally {
            Rests.leave();
        }
    }

    public static boolean lawait(CountDownLatch l, long t, TimeUnit u) throws InterruptedException {
        if (l.getCount() == 0) {
            return true;
        }
        if (u.toMillis(t) < SHORT_MS) {
            return l.await(t, u);
        }
        Rests.enter(Rests.LATCH, l);
        try {
            return l.await(t, u);
        } finally {
            Rests.leave();
        }
    }

    public static void sleep(long ms) throws InterruptedException {
        if (ms < SHORT_MS) {
            Thread.sleep(ms);
            return;
        }
        Rests.enter(Rests.SLEEP, null);
        try {
            Thread.sleep(ms);
        } finally {
            Rests.leave();
        }
    }

    // Waits for the network: as idle as a thread whose top frame is an `idle_frames` entry, known
    // without reading its stack (~0.4 ms a thread, several threads, several times per event).

    public static int nselect(java.nio.channels.Selector s) throws java.io.IOException {
        Rests.enter(Rests.NET, s);
        try {
            return s.select();
        } finally {
            Rests.leave();
        }
    }

    public static int nselect(java.nio.channels.Selector s, long ms) throws java.io.IOException {
        Rests.enter(Rests.NET, s);
        try {
            return s.select(ms);
        } finally {
            Rests.leave();
        }
    }

    /** A wait for a pool's workers to finish: rests while they do not (they may wait for flymc). */
    public static boolean xawait(java.util.concurrent.ExecutorService e, long t, TimeUnit u)
        throws InterruptedException {
        Rests.enter(Rests.EXEC, e);
        try {
            return e.awaitTermination(t, u);
        } finally {
            Rests.leave();
        }
    }

    /** Another thread wakes a selector: its selecting thread is busy from now on. */
    public static java.nio.channels.Selector nwakeup(java.nio.channels.Selector s) {
        Rests.wakeOn(s);
        return s.wakeup();
    }

    public static java.net.Socket naccept(java.net.ServerSocket s) throws java.io.IOException {
        Object impl = s.isBound() && s.getSoTimeout() == 0 ? Backlog.impl(s) : null;
        java.io.FileDescriptor fd = impl != null ? Backlog.fd(impl) : null;
        if (fd != null) {
            // Waits for a queued connection inside the rest and takes it outside (Backlog).
            Rests.enter(Rests.NET, fd);
            try {
                Backlog.awaitConnection(s, impl, fd);
            } finally {
                Rests.leave();
            }
            return s.accept();
        }
        Rests.enter(Rests.NET, s);
        try {
            return s.accept();
        } finally {
            Rests.leave();
        }
    }

    public static long clock() {
        return vclock.get();
    }

    // ---------------------------------------------------------------- configured points

    /** A rewritten call site of a configured point. */
    public static Object point(int id, Object recv, Object self, Object[] args) throws Throwable {
        return Points.point(id, recv, self, args);
    }

    /** Method entry of a configured point. */
    public static void entry(int id, Object self, Object[] args) throws Throwable {
        Points.entry(id, self, args);
    }

    /** Method exit of a `wake` point. */
    public static void exit(int id, Object self) {
        Points.exit(id, self);
    }

    /** Constructor exit of a captured class. */
    public static void capture(int id, Object self) {
        Points.capture(id, self);
    }

    /** The start of a catch block of an `exception` point's method: {@code where} caught {@code t}. */
    public static void caught(Throwable t, String where) {
        Exceptions.note(t, where, false);
    }

    /** {@code t} escapes {@code where}, a method an `exception` point names. */
    public static void escaped(Throwable t, String where) {
        Exceptions.note(t, where, true);
    }

    private Hook() {}
}
