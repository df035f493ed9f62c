package org.flymc.hook;

import java.io.EOFException;
import java.lang.reflect.Method;
import java.net.SocketException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * The hook's runtime, called from the rewritten bytecode.
 *
 * <p>Two jobs. (1) Configured points report messages, timers, disk writes to flymc and hold
 * them until flymc enables them. (2) Quiescence: flymc must learn when a node has finished
 * processing an enabled event, in a JVM with dozens of threads. Every blocking call in the
 * instrumented classes (queue take/poll, Object.wait, CountDownLatch.await, sleep, a selector's
 * select, a server socket's accept, a pool's awaitTermination, a thread's join) goes through
 * here, so the hook knows which threads rest and whether what they wait for has arrived; the
 * remaining threads are judged by their state and stack. The node is done when every thread
 * rests and nothing it waits for is available: at once when every thread rests in the hook's own waits (their
 * conditions are read, not guessed from a thread state that lags a wake-up) and nothing
 * entered or left a wait meanwhile; otherwise twice in a row with no hook activity between.
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
    /**
     * What `exception` points saw, in order: one record per Throwable, made where it was first
     * seen (the innermost configured handler that caught it, or configured method it escaped).
     * The hook adds it to every state it reports as the variable `exceptions`.
     */
    static final List<Map<String, Object>> exceptions =
        java.util.Collections.synchronizedList(new ArrayList<>());
    /** Throwables already recorded (by identity: Throwable keeps Object's equals). */
    private static final Map<Throwable, Boolean> seenThrowables =
        java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());
    private static final ThreadLocal<Boolean> noting = new ThreadLocal<>();
    /** The enabled event in progress: the parent of everything reported now (null at startup). */
    static volatile String current;
    private static final Map<String, Integer> seqs = new HashMap<>();
    static final AtomicLong gen = new AtomicLong();
    private static final Object changed = new Object();
    /** Virtual clock for the configured clock calls, advanced only by fired timers. */
    static final AtomicLong vclock = new AtomicLong(1_000_000_000L);
    /** Waits shorter than this end by themselves: the thread counts as busy. */
    static final long SHORT_MS = 1000;

    private Hook() {}

    static void log(String s) {
        System.err.println("flymc-hook n" + node + ": " + s);
        System.err.flush();
    }

    // ---------------------------------------------------------------- resting threads

    static final int QUEUE = 0, MONITOR = 1, LATCH = 2, SLEEP = 3, TIMER = 4, GATE = 5, PARK = 6, NET = 7, EXEC = 8,
        JOIN = 9, TURN = 10;

    static final class Rest {
        final int kind;
        final Object on;
        volatile boolean woken;

        Rest(int kind, Object on) {
            this.kind = kind;
            this.on = on;
        }

        boolean busy() {
            if (woken) {
                return true;
            }
            switch (kind) {
            case QUEUE: return !((BlockingQueue<?>) on).isEmpty();
            case LATCH: return ((CountDownLatch) on).getCount() == 0;
            case TIMER: return ((Timer) on).ready();
            case GATE: return ((Gate) on).ready();
            case PARK: return ((Mail) on).ready();
            // Its workers are done: the wait for them ends by itself.
            case EXEC: return ((java.util.concurrent.ExecutorService) on).isTerminated();
            // The thread it joins has ended: the join returns by itself.
            case JOIN: return !((Thread) on).isAlive();
            // A listener's queued connection: its thread takes it next.
            case NET: return on instanceof java.io.FileDescriptor && Backlog.queued((java.io.FileDescriptor) on);
            default: return false;
            }
        }
    }

    static final ConcurrentHashMap<Thread, Rest> resting = new ConcurrentHashMap<>();
    /** Threads doing hook work that looks idle from outside (a real read of an enabled packet). */
    static final Set<Thread> pinned = ConcurrentHashMap.newKeySet();

    static Rest enter(int kind, Object on) {
        Rest r = new Rest(kind, on);
        resting.put(Thread.currentThread(), r);
        bump();
        return r;
    }

    static void leave() {
        resting.remove(Thread.currentThread());
        bump();
    }

    static void bump() {
        gen.incrementAndGet();
        synchronized (changed) {
            changed.notifyAll();
        }
    }

    /**
     * Before something is put into queue or monitor `o`: every thread resting on it becomes
     * busy. Marking before the insert (not after) never marks a thread that has already taken the
     * item and gone back to rest, which would then look busy until its wait times out.
     */
    private static void wakeOn(Object o) {
        for (Rest r : resting.values()) {
            if (r.on == o || (r.kind == TIMER && ((Timer) r.on).monitor == o)) {
                r.woken = true;
            }
        }
        bump();
    }

    /** After an item went into queue `q`: timers waiting on it look again (they stay busy
     * while it is non-empty). */
    private static void inserted(Object q) {
        for (Rest r : resting.values()) {
            if (r.kind == TIMER && ((Timer) r.on).queue == q) {
                Timer t = (Timer) r.on;
                synchronized (t) {
                    t.notifyAll();
                }
            }
        }
        bump();
    }

    // ---------------------------------------------------------------- generic blocking bridges

    // Queues are only asked through their blocking methods here: some (ZooKeeper's
    // CircularBlockingQueue) do not implement the others.

    public static Object qtake(BlockingQueue<Object> q) throws InterruptedException {
        enter(QUEUE, q);
        try {
            return q.take();
        } finally {
            leave();
        }
    }

    public static Object qpoll(BlockingQueue<Object> q, long t, TimeUnit u) throws InterruptedException {
        if (t <= 0 || u.toMillis(t) < SHORT_MS) {
            return q.poll(t, u);
        }
        enter(QUEUE, q);
        try {
            return q.poll(t, u);
        } finally {
            leave();
        }
    }

    public static boolean qoffer(BlockingQueue<Object> q, Object x) {
        wakeOn(q);
        boolean ok = q.offer(x);
        inserted(q);
        return ok;
    }

    public static boolean qadd(BlockingQueue<Object> q, Object x) {
        wakeOn(q);
        boolean ok = q.add(x);
        inserted(q);
        return ok;
    }

    public static void qput(BlockingQueue<Object> q, Object x) throws InterruptedException {
        wakeOn(q);
        q.put(x);
        inserted(q);
    }

    public static void owait(Object o) throws InterruptedException {
        enter(MONITOR, o);
        try {
            o.wait();
        } finally {
            leave();
        }
    }

    public static void owait(Object o, long ms) throws InterruptedException {
        if (ms > 0 && ms < SHORT_MS) {
            o.wait(ms);
            return;
        }
        enter(MONITOR, o);
        try {
            o.wait(ms);
        } finally {
            leave();
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
        enter(JOIN, t);
        try {
            ((Thread) t).join();
        } finally {
            leave();
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
        enter(JOIN, t);
        try {
            ((Thread) t).join(ms);
        } finally {
            leave();
        }
    }

    private static void invokeOriginal(Object recv, String name, Class<?>[] types, Object... args) throws Throwable {
        try {
            method(recv.getClass(), name, types).invoke(recv, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }

    public static void onotify(Object o) {
        wakeOn(o);
        o.notify();
    }

    public static void onotifyAll(Object o) {
        wakeOn(o);
        o.notifyAll();
    }

    public static void lawait(CountDownLatch l) throws InterruptedException {
        if (l.getCount() == 0) {
            return;
        }
        enter(LATCH, l);
        try {
            l.await();
        } finally {
            leave();
        }
    }

    public static boolean lawait(CountDownLatch l, long t, TimeUnit u) throws InterruptedException {
        if (l.getCount() == 0) {
            return true;
        }
        if (u.toMillis(t) < SHORT_MS) {
            return l.await(t, u);
        }
        enter(LATCH, l);
        try {
            return l.await(t, u);
        } finally {
            leave();
        }
    }

    public static void sleep(long ms) throws InterruptedException {
        if (ms < SHORT_MS) {
            Thread.sleep(ms);
            return;
        }
        enter(SLEEP, null);
        try {
            Thread.sleep(ms);
        } finally {
            leave();
        }
    }

    // Waits for the network: as idle as a thread whose top frame is an `idle_frames` entry, known
    // without reading its stack (~0.4 ms a thread, several threads, several times per event).

    public static int nselect(java.nio.channels.Selector s) throws java.io.IOException {
        enter(NET, s);
        try {
            return s.select();
        } finally {
            leave();
        }
    }

    public static int nselect(java.nio.channels.Selector s, long ms) throws java.io.IOException {
        enter(NET, s);
        try {
            return s.select(ms);
        } finally {
            leave();
        }
    }

    /** A wait for a pool's workers to finish: rests while they do not (they may wait for flymc). */
    public static boolean xawait(java.util.concurrent.ExecutorService e, long t, TimeUnit u)
        throws InterruptedException {
        enter(EXEC, e);
        try {
            return e.awaitTermination(t, u);
        } finally {
            leave();
        }
    }

    /** Another thread wakes a selector: its selecting thread is busy from now on. */
    public static java.nio.channels.Selector nwakeup(java.nio.channels.Selector s) {
        wakeOn(s);
        return s.wakeup();
    }

    public static java.net.Socket naccept(java.net.ServerSocket s) throws java.io.IOException {
        Object impl = s.isBound() && s.getSoTimeout() == 0 ? Backlog.impl(s) : null;
        java.io.FileDescriptor fd = impl != null ? Backlog.fd(impl) : null;
        if (fd != null) {
            // Waits for a queued connection inside the rest and takes it outside (Backlog).
            enter(NET, fd);
            try {
                Backlog.awaitConnection(s, impl, fd);
            } finally {
                leave();
            }
            return s.accept();
        }
        enter(NET, s);
        try {
            return s.accept();
        } finally {
            leave();
        }
    }

    public static long clock() {
        return vclock.get();
    }

    // ---------------------------------------------------------------- events

    static synchronized int nextSeq(String key) {
        int s = seqs.getOrDefault(key, 0);
        seqs.put(key, s + 1);
        return s;
    }

    /** Report one event; returns its id. */
    static String report(String kind, String name, int to, Object fields, Object payload, String channel,
        Integer peer) {
        return report(kind, name, to, fields, payload, channel, peer, null);
    }

    /** Report one event, for a timer with how long its node waits; returns its id. */
    static String report(String kind, String name, int to, Object fields, Object payload, String channel,
        Integer peer, Long delayMs) {
        String parent = current;
        String view = settled;
        if (view != null) {
            log("late: " + kind + " " + name + " from " + Thread.currentThread().getName()
                + " after the node said done; its threads then: " + view);
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("parent", parent);
        e.put("seq", (long) nextSeq(parent + "|" + kind + "|" + name + "|" + to));
        e.put("kind", kind);
        e.put("name", name);
        e.put("to", (long) to);
        if (fields instanceof Map && !((Map<?, ?>) fields).isEmpty()) {
            e.put("fields", fields);
        }
        if (payload != null) {
            e.put("payload", payload);
        }
        if (channel != null) {
            e.put("channel", channel);
        }
        if (peer != null) {
            e.put("peer", (long) (int) peer);
        }
        if (delayMs != null) {
            e.put("delay_ms", delayMs);
        }
        Map<String, Object> body = base();
        List<Object> evs = new ArrayList<>();
        evs.add(e);
        body.put("events", evs);
        Map<String, Object> r = call("events", body);
        return (String) ((List<?>) r.get("ids")).get(0);
    }

    static void cancel(String id) {
        Map<String, Object> body = base();
        List<Object> ids = new ArrayList<>();
        ids.add(id);
        body.put("ids", ids);
        call("cancel", body);
    }

    /** A request from a node thread: it waits for the answer, but it is busy, not resting. */
    static Map<String, Object> call(String endpoint, Map<String, Object> body) {
        Thread me = Thread.currentThread();
        boolean pin = pinned.add(me);
        try {
            return net.post(endpoint, body, false);
        } finally {
            if (pin) {
                pinned.remove(me);
            }
            bump();
        }
    }

    static Map<String, Object> base() {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("node", (long) node);
        b.put("incarnation", (long) incarnation);
        return b;
    }

    // ---------------------------------------------------------------- mailboxes for orders

    /** A thread parked for one order (a disk write, a timer). */
    static final class Mail {
        volatile Map<String, Object> order;

        boolean ready() {
            return order != null;
        }
    }

    /** A timer: fires on its order, or is withdrawn when its queue gets an item or its monitor a notify. */
    static final class Timer {
        final BlockingQueue<?> queue;
        /** For a timer over Object.wait: the monitor whose notify withdraws it. */
        volatile Object monitor;
        volatile boolean fired;

        Timer(BlockingQueue<?> queue) {
            this.queue = queue;
        }

        boolean ready() {
            return fired || (queue != null && !queue.isEmpty());
        }
    }

    /** One connection's reader side: orders to deliver the next packet, in channel order. */
    static final class Gate {
        final ArrayDeque<Map<String, Object>> mailbox = new ArrayDeque<>();
        volatile boolean broken;
        volatile String disconnectTimer;
        /** A thread has read from this connection: its packets no longer wait for a reader to exist. */
        volatile boolean hadReader;
        /** Its reader waits for its turn (with what else came for it still in the mailbox). */
        volatile boolean inTurn;
        /** The read's timeout timer fired: the reader gets a SocketTimeoutException. */
        volatile boolean timedOut;

        synchronized boolean ready() {
            return broken || timedOut || !mailbox.isEmpty();
        }
    }

    static final Map<String, Mail> parked = new ConcurrentHashMap<>();
    static final Map<String, Timer> timers = new ConcurrentHashMap<>();
    static final Map<String, Gate> gates = new ConcurrentHashMap<>();
    /** Timer id -> the gate it disconnects. */
    static final Map<String, Gate> disconnects = new ConcurrentHashMap<>();
    /** Read-timeout timer id -> the gate whose waiting read it ends. */
    static final Map<String, Gate> readTimeouts = new ConcurrentHashMap<>();

    static Gate gate(String conn) {
        return gates.computeIfAbsent(conn, k -> new Gate());
    }

    // ---------------------------------------------------------------- configured points

    private static final Map<Integer, Method> ORIGINALS = new ConcurrentHashMap<>();

    static Map<String, Object> env(Object recv, Object self, Object[] args) {
        Map<String, Object> env = new HashMap<>(captures);
        env.put("this", self);
        env.put("recv", recv);
        for (int i = 0; i < args.length; i++) {
            env.put("arg" + i, args[i]);
        }
        env.put("node", (long) node);
        env.put("nodes", (long) nodes);
        env.put("event", current);
        return env;
    }

    /** Method `name(types)` of `owner` or a superclass, whatever its access, made callable. */
    private static Method method(Class<?> owner, String name, Class<?>[] types) throws NoSuchMethodException {
        Method m = null;
        for (Class<?> k = owner; k != null && m == null; k = k.getSuperclass()) {
            try {
                m = k.getDeclaredMethod(name, types);
            } catch (NoSuchMethodException e) {
                // look further up
            }
        }
        if (m == null) {
            m = owner.getMethod(name, types);
        }
        m.setAccessible(true);
        return m;
    }

    static Object original(Point p, Object recv, Object[] args) throws Throwable {
        if (recv != null && p.callName.equals("wait") && p.callDesc.equals("(J)V")) {
            // A timed wait the point lets through (its `when` is false) rests like any other.
            owait(recv, (Long) args[0]);
            return null;
        }
        Method m = ORIGINALS.get(p.id);
        if (m == null) {
            Class<?> owner = p.callOwner.equals("*") && recv != null ? recv.getClass()
                : Class.forName(p.callOwner.replace('/', '.'), false, loader(recv));
            org.objectweb.asm.Type[] at = org.objectweb.asm.Type.getArgumentTypes(p.callDesc);
            Class<?>[] pt = new Class<?>[at.length];
            for (int i = 0; i < at.length; i++) {
                pt[i] = classOf(at[i], loader(recv));
            }
            m = method(owner, p.callName, pt);
            ORIGINALS.put(p.id, m);
        }
        if (recv instanceof BlockingQueue) {
            wakeOn(recv);
        }
        try {
            return m.invoke(recv, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        } finally {
            if (recv instanceof BlockingQueue) {
                inserted(recv);
            }
        }
    }

    private static ClassLoader loader(Object o) {
        ClassLoader l = o != null ? o.getClass().getClassLoader() : null;
        return l != null ? l : ClassLoader.getSystemClassLoader();
    }

    private static Class<?> classOf(org.objectweb.asm.Type t, ClassLoader l) throws ClassNotFoundException {
        switch (t.getSort()) {
        case org.objectweb.asm.Type.BOOLEAN: return boolean.class;
        case org.objectweb.asm.Type.INT: return int.class;
        case org.objectweb.asm.Type.LONG: return long.class;
        case org.objectweb.asm.Type.BYTE: return byte.class;
        case org.objectweb.asm.Type.SHORT: return short.class;
        case org.objectweb.asm.Type.CHAR: return char.class;
        case org.objectweb.asm.Type.FLOAT: return float.class;
        case org.objectweb.asm.Type.DOUBLE: return double.class;
        default: return Class.forName(t.getSort() == org.objectweb.asm.Type.ARRAY ? t.getDescriptor().replace('/', '.')
            : t.getClassName(), false, l);
        }
    }

    private static int toNode(Point p, Map<String, Object> env) {
        Object v = p.to != null ? p.to.eval(env) : null;
        return v == null ? -1 : (int) Expr.num(v);
    }

    /** A rewritten call site of a configured point. */
    public static Object point(int id, Object recv, Object self, Object[] args) throws Throwable {
        Point p = points.get(id);
        Map<String, Object> env = env(recv, self, args);
        try {
            if (p.when != null && !Expr.truth(p.when.eval(env))) {
                return original(p, recv, args);
            }
        } catch (RuntimeException e) {
            // A configuration error must not take the node down: say so, and do what the code did.
            log("hook point " + p.kind + " " + p.name + " in " + p.in + ": " + e);
            return original(p, recv, args);
        }
        switch (p.kind) {
        case "send": {
            int to = -1;
            String name = null, channel = null;
            Object fields = null, payload = null;
            try {
                to = toNode(p, env);
                if (to >= 0 && to < nodes) {
                    name = p.name(env);
                    fields = p.fields != null ? p.fields.eval(env) : null;
                    payload = payloadWithConn(p, env);
                    channel = p.channel != null ? String.valueOf(p.channel.eval(env)) : null;
                }
            } catch (RuntimeException e) {
                log("hook point send in " + p.in + ": " + e);
                to = -1;
            }
            if (to >= 0 && to < nodes) {
                report("message", name, to, fields, payload, channel, null);
            }
            if (p.proceed) {
                try {
                    return original(p, recv, args);
                } catch (java.io.IOException e) {
                    // Real writes never fail here: losing a connection is a disconnect event of the
                    // reader, so the moment a node notices a dead peer is flymc's choice.
                    return p.returns != null ? p.returns.eval(env) : null;
                }
            }
            return p.returns != null ? p.returns.eval(env) : null;
        }
        case "suppress":
            return p.returns != null ? p.returns.eval(env) : null;
        case "write":
            // A real write of what `send` points reported (a buffered stream's flush): as there,
            // it never fails, or whether a node notices its peer's close at a flush or later
            // would hang on when the kernel handled that close, not on flymc's order.
            try {
                return original(p, recv, args);
            } catch (java.io.IOException e) {
                return p.returns != null ? p.returns.eval(env) : null;
            }
        case "timer":
            return timer(p, env, recv, args);
        case "read":
            return read(p, env, recv, args);
        case "close": {
            Object c;
            int closeTo;
            try {
                c = p.conn != null ? p.conn.eval(env) : null;
                closeTo = toNode(p, env);
            } catch (RuntimeException e) {
                log("hook point close in " + p.in + ": " + e);
                c = null;
                closeTo = -1;
            }
            if (c != null) {
                Gate g = gate(String.valueOf(c));
                String t = g.disconnectTimer;
                if (t != null) {
                    g.disconnectTimer = null;
                    disconnects.remove(t);
                    cancel(t);
                }
                int to = closeTo;
                if (to >= 0 && to < nodes && !g.broken) {
                    Map<String, Object> pl = new LinkedHashMap<>();
                    pl.put("conn", String.valueOf(c));
                    pl.put("close", Boolean.TRUE);
                    report("message", p.name(env) != null ? p.name(env) : "CLOSE", to, null, pl,
                        String.valueOf(c), null);
                }
                g.broken = true;
            }
            try {
                return original(p, recv, args);
            } catch (java.io.IOException e) {
                return null;
            }
        }
        default:
            throw new IllegalStateException("point kind " + p.kind + " cannot be a call site");
        }
    }

    private static Object payloadWithConn(Point p, Map<String, Object> env) {
        Object pl = p.payload != null ? p.payload.eval(env) : null;
        if (p.conn == null) {
            return pl;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("conn", String.valueOf(p.conn.eval(env)));
        if (pl != null) {
            m.put("data", pl);
        }
        return m;
    }

    /** A timed wait that is a flymc timer: queue poll, Object.wait(ms) or sleep(ms) at this site. */
    private static Object timer(Point p, Map<String, Object> env, Object recv, Object[] args) throws Throwable {
        BlockingQueue<?> q = recv instanceof BlockingQueue ? (BlockingQueue<?>) recv : null;
        if (q != null) {
            Object x = q.poll(0, TimeUnit.MILLISECONDS);
            if (x != null) {
                return x;
            }
        }
        long ms = 0;
        if (args.length >= 1 && args[0] instanceof Long) {
            ms = (Long) args[0];
            if (args.length >= 2 && args[1] instanceof TimeUnit) {
                ms = ((TimeUnit) args[1]).toMillis(ms);
            }
        }
        long deadline = vclock.get() + ms;
        // A clock timer's wait is counted in the node's own (stretched) ticks, not in real time.
        String id = report("timeout", p.name(env), node, null, null, null, null, p.clock ? null : ms);
        Timer t = new Timer(q);
        boolean monitor = q == null && recv != null && p.callName.equals("wait");
        if (monitor) {
            t.monitor = recv;
        }
        timers.put(id, t);
        if (monitor) {
            timerMonitors.put(id, recv);
        }
        Rest r = enter(TIMER, t);
        boolean fired;
        try {
            if (monitor) {
                // We hold recv's monitor (Object.wait's contract): a notify ends the wait, and so
                // does the timer's order, which notifies recv.
                while (!t.fired && !r.woken) {
                    recv.wait();
                }
            } else {
                // Woken only by the queue getting an item or the timer firing (the 100 ms is a
                // backstop for producers outside the instrumented code).
                synchronized (t) {
                    while (!t.ready()) {
                        t.wait(100);
                    }
                }
            }
            fired = t.fired;
        } finally {
            timers.remove(id);
            timerMonitors.remove(id);
            leave();
        }
        if (fired) {
            if (p.clock) {
                vclock.accumulateAndGet(deadline, Math::max);
            }
            return q != null ? null : null;
        }
        cancel(id);
        if (q != null) {
            return q.poll(0, TimeUnit.MILLISECONDS);
        }
        return null;
    }

    static final Map<String, Object> timerMonitors = new ConcurrentHashMap<>();

    /** A read of the next packet on a connection: waits for flymc to enable it, then reads it. */
    private static Object read(Point p, Map<String, Object> env, Object recv, Object[] args) throws Throwable {
        String conn = String.valueOf(p.conn.eval(env));
        Gate g = gate(conn);
        g.hadReader = true;
        Object pv = p.peer != null ? p.peer.eval(env) : null;
        if (pv != null && g.disconnectTimer == null && !g.broken) {
            int peer = (int) Expr.num(pv);
            if (peer >= 0 && peer < nodes) {
                // A dead peer's connection breaks at once (the kernel closes it).
                String t = report("timeout", "disconnect", node, null, null, null, peer, 0L);
                g.disconnectTimer = t;
                disconnects.put(t, g);
            }
        }
        // The socket's read timeout is a timer flymc fires, so a learner waiting on a leader
        // that went back to electing gives up as it would in real time.
        String rt = null;
        if (p.timeout != null && g.mailbox.isEmpty() && !g.broken
            && (p.timeoutWhen == null || Expr.truth(p.timeoutWhen.eval(env)))) {
            rt = report("timeout", p.timeout, node, null, null, null, null);
            readTimeouts.put(rt, g);
        }
        Map<String, Object> order;
        boolean timedOut;
        enter(GATE, g);
        try {
            synchronized (g) {
                while (g.mailbox.isEmpty() && !g.broken && !g.timedOut) {
                    g.wait(100);
                }
                timedOut = g.timedOut && g.mailbox.isEmpty() && !g.broken;
                g.timedOut = false;
                order = timedOut ? null : g.mailbox.poll();
            }
            if (order != null && early.remove(order)) {
                awaitTurn(((Number) order.get("seq")).longValue(), g);
            }
            if (!timedOut) {
                pinned.add(Thread.currentThread());
            }
        } finally {
            if (rt != null) {
                readTimeouts.remove(rt);
            }
            leave();
        }
        if (timedOut) {
            throw new java.net.SocketTimeoutException("flymc: the read timed out");
        }
        if (rt != null) {
            cancel(rt);
        }
        try {
            if (order == null) {
                throw new SocketException("flymc: the connection to the peer is lost");
            }
            Object pl = ((Map<?, ?>) order.get("event")).get("payload");
            if (pl instanceof Map && Boolean.TRUE.equals(((Map<?, ?>) pl).get("close"))) {
                g.broken = true;
                throw new EOFException("flymc: the peer closed the connection");
            }
            return original(p, recv, args);
        } finally {
            pinned.remove(Thread.currentThread());
            bump();
        }
    }

    // ---------------------------------------------------------------- exceptions

    /** The start of a catch block of an `exception` point's method: {@code where} caught {@code t}. */
    public static void caught(Throwable t, String where) {
        note(t, where, false);
    }

    /** {@code t} escapes {@code where}, a method an `exception` point names. */
    public static void escaped(Throwable t, String where) {
        note(t, where, true);
    }

    /** IPv4 addresses with their ports: they differ from run to run (free ports), so a
     *  message keeps `<addr>` instead and states stay comparable. */
    static final Pattern ADDRESS = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}(:\\d+)?");

    /** How many stack frames a record keeps. */
    static final int FRAMES = 5;

    private static void note(Throwable t, String where, boolean escaped) {
        // getMessage() may run instrumented code that catches exceptions of its own.
        if (t == null || noting.get() != null) {
            return;
        }
        noting.set(Boolean.TRUE);
        try {
            if (seenThrowables.put(t, Boolean.TRUE) != null) {
                return;
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("type", t.getClass().getName());
            String msg;
            try {
                msg = t.getMessage();
            } catch (RuntimeException e) {
                msg = null;
            }
            r.put("message", msg != null ? ADDRESS.matcher(msg).replaceAll("<addr>") : null);
            r.put("where", where);
            List<Object> frames = new ArrayList<>();
            for (StackTraceElement f : t.getStackTrace()) {
                if (frames.size() == FRAMES) {
                    break;
                }
                // The hook's own frames (a read that throws for a lost connection) and its
                // bridges say nothing about the system.
                if (f.getClassName().startsWith("org.flymc.hook.") || f.getMethodName().startsWith("flymc$")) {
                    continue;
                }
                frames.add(f.getClassName() + "." + f.getMethodName() + ":" + f.getLineNumber());
            }
            r.put("frames", frames);
            if (escaped) {
                r.put("escaped", Boolean.TRUE);
            }
            exceptions.add(r);
            if (TRACE_EXCEPTIONS) {
                log("exception " + r);
            }
        } finally {
            noting.remove();
        }
        bump();
    }

    /** FLYMC_HOOK_TRACE=1: log every exception record as it is made. */
    static final boolean TRACE_EXCEPTIONS = System.getenv("FLYMC_HOOK_TRACE") != null;

    /**
     * The records so far, for the state (null when there are none, so the state stays as it
     * was), sorted by their JSON text: threads that record during one event race, and the
     * state must not depend on which came first.
     */
    static List<Object> exceptionRecords() {
        List<String> keys = new ArrayList<>();
        Map<String, List<Map<String, Object>>> byKey = new HashMap<>();
        synchronized (exceptions) {
            if (exceptions.isEmpty()) {
                return null;
            }
            for (Map<String, Object> r : exceptions) {
                String k = Json.write(r);
                keys.add(k);
                byKey.computeIfAbsent(k, x -> new ArrayList<>()).add(r);
            }
        }
        java.util.Collections.sort(keys);
        List<Object> out = new ArrayList<>();
        for (String k : keys) {
            out.add(byKey.get(k).remove(0));
        }
        return out;
    }

    /** Method entry of a configured point (disk crash points, records, and timers without a
     *  call: the method waits at its entry until flymc fires the timer, e.g. a node's start). */
    public static void entry(int id, Object self, Object[] args) throws Throwable {
        Point p = points.get(id);
        Map<String, Object> env = env(null, self, args);
        if (p.when != null && !Expr.truth(p.when.eval(env))) {
            return;
        }
        if (p.kind.equals("record")) {
            recorded.add(String.valueOf(p.fields.eval(env)));
            bump();
            return;
        }
        if (p.kind.equals("timer")) {
            // A zero-length wait with nothing to wake it but the timer (no queue, no monitor).
            timer(p, env, null, new Object[0]);
            return;
        }
        if (!p.kind.equals("disk")) {
            return;
        }
        // Fields say what is written (an epoch's value): flymc tells disk states apart by them.
        Object fields = p.fields != null ? p.fields.eval(env) : null;
        String eid = report("disk", p.name(env), node, fields, null, null, null);
        Mail m = new Mail();
        parked.put(eid, m);
        enter(PARK, m);
        try {
            synchronized (m) {
                while (m.order == null) {
                    m.wait(100);
                }
            }
        } finally {
            parked.remove(eid);
            leave();
        }
    }

    /**
     * Method exit of a `wake` point: notify the monitor its expression names, so a thread
     * waiting there re-checks a condition that changed (a timer's `when`). Waits may wake
     * spuriously, so this never changes what the code can do.
     */
    public static void exit(int id, Object self) {
        Point p = points.get(id);
        try {
            Object o = p.action.eval(env(null, self, new Object[0]));
            if (o != null) {
                synchronized (o) {
                    onotifyAll(o);
                }
            }
        } catch (RuntimeException e) {
            log("hook point wake in " + p.in + ": " + e);
        }
    }

    /** Constructor exit of a captured class. */
    public static void capture(int id, Object self) {
        captures.put(points.get(id).name, self);
    }

    // ---------------------------------------------------------------- orders

    static Point deliverPoint(String name) {
        for (Point p : points) {
            if (p.kind.equals("deliver") && (p.name == null || p.name.equals(name))) {
                return p;
            }
        }
        return null;
    }

    /** Hand an enabled event to whatever waits for it (on the dispatcher thread). */
    @SuppressWarnings("unchecked")
    static void dispatch(Map<String, Object> order) {
        Map<String, Object> ev = (Map<String, Object>) order.get("event");
        String id = (String) ev.get("id");
        String kind = (String) ev.get("kind");
        String name = (String) ev.get("name");
        current = id;
        settled = null;
        bump();
        switch (kind) {
        case "message": {
            Object pl = ev.get("payload");
            Point d = deliverPoint(name);
            if (d != null && !(pl instanceof Map && ((Map<?, ?>) pl).containsKey("conn"))) {
                Map<String, Object> env = new HashMap<>(captures);
                env.put("payload", pl);
                env.put("fields", ev.get("fields"));
                env.put("from", ev.get("from"));
                env.put("node", (long) node);
                d.action.eval(env);
                return;
            }
            if (pl instanceof Map && ((Map<?, ?>) pl).get("conn") != null) {
                Gate g = gate(String.valueOf(((Map<?, ?>) pl).get("conn")));
                synchronized (g) {
                    // A packet for a connection this node has closed is lost, as TCP would lose it.
                    if (!g.broken) {
                        g.mailbox.add(order);
                        if (!g.hadReader) {
                            early.add(order);
                        }
                    }
                    g.notifyAll();
                }
                return;
            }
            log("no delivery configured for message " + name + "; dropped");
            return;
        }
        case "timeout": {
            Gate rg = readTimeouts.remove(id);
            if (rg != null) {
                synchronized (rg) {
                    rg.timedOut = true;
                    rg.notifyAll();
                }
                return;
            }
            Gate g = disconnects.remove(id);
            if (g != null) {
                g.disconnectTimer = null;
                synchronized (g) {
                    g.broken = true;
                    g.notifyAll();
                }
                return;
            }
            Timer t = timers.get(id);
            Object mon = timerMonitors.get(id);
            if (t != null && mon != null) {
                // The waiter needs mon's monitor back, and another thread may hold it while it
                // waits at a crash point: fire from a thread of its own, which rests blocked
                // until that one moves (the timer counts as fired only once it has the monitor).
                Thread fire = new Thread(() -> {
                    synchronized (mon) {
                        t.fired = true;
                        mon.notifyAll();
                    }
                    bump();
                }, "flymc-timer-fire");
                fire.setDaemon(true);
                fire.start();
            } else if (t != null) {
                t.fired = true;
                synchronized (t) {
                    t.notifyAll();
                }
            }
            return;
        }
        case "disk": {
            Mail m = parked.get(id);
            if (m != null) {
                synchronized (m) {
                    m.order = order;
                    m.notifyAll();
                }
            }
            return;
        }
        case "client": {
            Point d = null;
            for (Point p : points) {
                if (p.kind.equals("client") && (p.name == null || p.name.equals(name))) {
                    d = p;
                }
            }
            if (d == null) {
                log("no client action configured for " + name);
                return;
            }
            Map<String, Object> env = new HashMap<>(captures);
            env.put("fields", ev.get("fields"));
            env.put("payload", ev.get("payload"));
            env.put("node", (long) node);
            env.put("id", id);
            d.action.eval(env);
            return;
        }
        default:
            log("unknown event kind " + kind);
        }
    }

    // ---------------------------------------------------------------- quiescence

    static List<Pattern> ignoreThreads = new ArrayList<>();
    /** The hook's own threads (threads they start, like a client library's, are not). */
    static final Set<Thread> agentThreads = ConcurrentHashMap.newKeySet();
    static List<String> idleFrames = new ArrayList<>();

    private static ThreadGroup root;

    /** Every live thread, without stopping the JVM to walk their stacks. */
    private static Thread[] threads() {
        if (root == null) {
            ThreadGroup g = Thread.currentThread().getThreadGroup();
            while (g.getParent() != null) {
                g = g.getParent();
            }
            root = g;
        }
        Thread[] all = new Thread[root.activeCount() + 16];
        int n = root.enumerate(all, true);
        return java.util.Arrays.copyOf(all, n);
    }

    /**
     * Whether the last {@link #busyThread} found the node quiet from the hook's own books alone:
     * every thread it counts rests in the hook (whose wait conditions it reads directly) or has
     * ended, none was judged idle by its JVM state or stack. A state lags a wake-up until the
     * woken thread runs; the hook's rests do not.
     */
    static boolean exact;
    /** The first thread that made the last check sampled (FLYMC_HOOK_TRACE only: a stack walk). */
    static String inexactBy;

    /**
     * FLYMC_HOOK_TRACE: what the node's threads were doing when it was last found quiet, until
     * the next order (for a report that comes after all).
     */
    static volatile String settled;

    /** FLYMC_HOOK_TRACE: the threads the last check counted, as it saw them. */
    static StringBuilder checked;

    static String busyThread() {
        exact = true;
        inexactBy = null;
        checked = Agent.TRACE ? new StringBuilder() : null;
        for (Thread t : threads()) {
            if (t == Thread.currentThread() || ignored(t)) {
                continue;
            }
            if (checked != null) {
                Rest seen = resting.get(t);
                checked.append(t.getName()).append(':').append(t.getState())
                    .append(seen != null ? "/rest" + seen.kind : "").append("; ");
            }
            if (pinned.contains(t)) {
                return t.getName() + " (reading)";
            }
            Thread.State st = t.getState();
            if (st == Thread.State.BLOCKED && blockedByRest(t)) {
                // Woken or not, it goes on only after flymc moves the thread it waits for
                // (judged by its state, which may lag: not exact).
                exact = false;
                continue;
            }
            if ((st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING) && t.isInterrupted()) {
                // Interrupted, it wakes, in the hook's waits or not (a pool shutting down
                // interrupts its idle workers).
                return t.getName() + " (interrupted)";
            }
            Rest r = resting.get(t);
            if (r != null) {
                if (r.busy()) {
                    return t.getName() + " (woken)";
                }
                if (r.kind == JOIN && ((Thread) r.on).isAlive() && ignored((Thread) r.on)) {
                    // The thread it joins is one the hook does not follow: whether that one is
                    // about to end only sampling can tell.
                    exact = false;
                    if (Agent.TRACE) {
                        inexactBy = t.getName() + " joins " + ((Thread) r.on).getName();
                    }
                }
                // Read after its condition: a thread that took what it waited for (a queue's
                // item, a gate's packet) runs again, and says so in its state before it takes
                // it, but leaves its rest only after. The network's waits run in native code.
                if (exact && r.kind != NET) {
                    Thread.State now = t.getState();
                    if (now != Thread.State.WAITING && now != Thread.State.TIMED_WAITING) {
                        exact = false;
                        if (Agent.TRACE) {
                            inexactBy = t.getName() + " " + now + " in a rest";
                        }
                    }
                }
                continue;
            }
            if (exact && Agent.TRACE) {
                StackTraceElement[] top = t.getStackTrace();
                inexactBy = t.getName() + " " + st + (top.length > 0 ? " at " + top[0] : "");
            }
            // Not in the hook's books, so not exact. Not even a thread that ended since the
            // list was taken: it ran during the check, in code the hook does not see (a pool
            // worker that terminated its pool woke the thread in awaitTermination, read
            // before as resting).
            exact = false;
            if (st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING || st == Thread.State.TERMINATED
                || st == Thread.State.NEW) {
                continue;
            }
            // Only a running thread's stack is looked at (it may be waiting in the network).
            StackTraceElement[] s = st == Thread.State.RUNNABLE ? t.getStackTrace() : new StackTraceElement[0];
            if (st == Thread.State.RUNNABLE && idle(s) && (s.length > 0 || jvmOwn(t))) {
                continue;
            }
            return t.getName() + " " + st + (s.length > 0 ? " at " + s[0] : "");
        }
        // A packet with no reader at its gate is on its way to one, unless a thread waits at a
        // crash point: then the reader may not exist before that write (a leader accepts
        // learners only after its snapshot), and the packet is read when flymc enables it.
        boolean parkedAtWrite = false;
        for (Rest r : resting.values()) {
            parkedAtWrite |= r.kind == PARK && !r.busy();
        }
        for (Gate g : gates.values()) {
            synchronized (g) {
                if (!g.mailbox.isEmpty() && !g.broken && !parkedAtWrite && !g.inTurn) {
                    return "a packet waits for its reader";
                }
            }
        }
        return null;
    }

    /**
     * A thread blocked on a monitor that a resting thread holds (say, one parked at a crash
     * point inside a synchronized method) rests too: it goes on only after flymc moves that one.
     */
    private static boolean blockedByRest(Thread t) {
        java.lang.management.ThreadInfo info =
            java.lang.management.ManagementFactory.getThreadMXBean().getThreadInfo(t.getId());
        if (info == null || info.getLockOwnerId() < 0) {
            return false;
        }
        for (Map.Entry<Thread, Rest> e : resting.entrySet()) {
            if (e.getKey().getId() == info.getLockOwnerId()) {
                return !e.getValue().busy();
            }
        }
        return false;
    }

    /**
     * A running thread with no Java frame is either the JVM's own (the signal dispatcher, in the
     * system group) or one just started that has not run yet: that one is about to work (a
     * leader's new sender thread writes NEWLEADER, a new LearnerHandler reads its learner).
     */
    private static boolean jvmOwn(Thread t) {
        ThreadGroup g = t.getThreadGroup();
        return g != null && g.getParent() == null;
    }

    private static boolean idle(StackTraceElement[] s) {
        if (s.length == 0) {
            return true;
        }
        // A connect waits in the same poll as a read, but for its own handshake, not for a
        // peer's event: the thread is busy until it connects or fails (at once on this network).
        for (int i = 0; i < Math.min(s.length, 10); i++) {
            String f = s[i].getClassName() + "." + s[i].getMethodName();
            if (f.equals("java.net.Socket.connect") || f.equals("sun.nio.ch.SocketChannelImpl.connect")) {
                return false;
            }
        }
        String top = s[0].getClassName() + "." + s[0].getMethodName();
        for (String f : idleFrames) {
            // Exact, or a prefix ending in `*`: `sun.nio.ch.Net.poll` (a read's wait) must not
            // take in `Net.pollConnect`, a thread busy connecting.
            if (f.endsWith("*") ? top.startsWith(f.substring(0, f.length() - 1)) : top.equals(f)) {
                return true;
            }
        }
        return false;
    }

    private static boolean ignored(Thread t) {
        if (agentThreads.contains(t)) {
            return true;
        }
        String n = t.getName();
        for (Pattern p : ignoreThreads) {
            if (p.matcher(n).find()) {
                return true;
            }
        }
        return false;
    }

    /** FLYMC_HOOK_QUIET=sampled: never settle on one exact check (for `flymc bench real`). */
    static final boolean SAMPLED_ONLY = "sampled".equals(System.getenv("FLYMC_HOOK_QUIET"));
    /** Quiet checks settled by one exact look, and by two sampled ones (for the diagnostics). */
    static long exactQuiet, sampledQuiet;
    static volatile String lastBusy;
    static volatile String lastBusySeen;

    // ---------------------------------------------------------------- turns

    /**
     * Packets flymc enabled before their connection had a reader (a leader's learners' first
     * packets, enabled while it writes its snapshot, before it accepts them): their readers,
     * once they exist, would all run at once in one event and race. They take turns instead.
     */
    static final Set<Map<String, Object>> early =
        java.util.Collections.synchronizedSet(java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
    private static final Object turns = new Object();
    /** Readers of early packets waiting for their turn, by the order flymc enabled the packets. */
    private static final java.util.TreeMap<Long, Thread> turnWaiting = new java.util.TreeMap<>();
    private static Thread granted;

    /** Rest until the node is otherwise quiet and this reader's packet is the earliest waiting. */
    private static void awaitTurn(long seq, Gate g) {
        synchronized (turns) {
            g.inTurn = true;
            enter(TURN, turns);
            turnWaiting.put(seq, Thread.currentThread());
            try {
                while (granted != Thread.currentThread()) {
                    turns.wait(100);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                turnWaiting.remove(seq);
                g.inTurn = false;
                if (granted == Thread.currentThread()) {
                    granted = null;
                }
            }
        }
    }

    /** Let the reader of the earliest early packet go on; false when none waits. */
    private static boolean grantTurn() {
        synchronized (turns) {
            java.util.Map.Entry<Long, Thread> first = turnWaiting.firstEntry();
            if (first == null) {
                return false;
            }
            granted = first.getValue();
            Rest r = resting.get(granted);
            if (r != null) {
                r.woken = true;
            }
            turns.notifyAll();
        }
        bump();
        return true;
    }

    /**
     * Wait until the node rests; readers of early packets go on one at a time, in the order
     * flymc enabled their packets, each once all else rests.
     */
    static void awaitQuiet() throws InterruptedException {
        do {
            awaitQuietOnce();
        } while (grantTurn());
    }

    /** Wait until the node rests: nothing busy twice in a row with no hook activity between. */
    private static void awaitQuietOnce() throws InterruptedException {
        long start = System.nanoTime(), told = start;
        while (true) {
            long g = gen.get();
            String b = busyThread();
            lastBusy = b;
            if (b != null) {
                lastBusySeen = b;
            }
            if (b != null && System.nanoTime() - told > 5_000_000_000L) {
                told = System.nanoTime();
                log("still busy after " + (told - start) / 1_000_000 + " ms: " + b);
            }
            if (b == null && exact && !SAMPLED_ONLY && gen.get() == g) {
                // Nothing entered or left a rest while the books were read: no second look.
                exactQuiet++;
                if (Agent.TRACE) {
                    settled = checked + " (exact)";
                }
                return;
            }
            if (b == null) {
                synchronized (changed) {
                    if (gen.get() == g) {
                        changed.wait(3);
                    }
                }
                if (gen.get() == g && busyThread() == null) {
                    sampledQuiet++;
                    if (Agent.TRACE) {
                        settled = checked + " (sampled)";
                    }
                    return;
                }
            } else {
                synchronized (changed) {
                    if (gen.get() == g) {
                        changed.wait(2);
                    }
                }
            }
        }
    }
}
