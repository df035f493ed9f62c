package org.flymc.hook;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * Quiescence: whether every thread of the node rests (from the hook's books, the threads' states
 * and stacks), and readers of early packets taking turns, so flymc learns when an event is done.
 */
final class Quiescence {
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
                Rests.Rest seen = Rests.resting.get(t);
                checked.append(t.getName()).append(':').append(t.getState())
                    .append(seen != null ? "/rest" + seen.kind : "").append("; ");
            }
            if (Rests.pinned.contains(t)) {
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
            Rests.Rest r = Rests.resting.get(t);
            if (r != null) {
                if (r.busy()) {
                    return t.getName() + " (woken)";
                }
                if (r.kind == Rests.JOIN && ((Thread) r.on).isAlive() && ignored((Thread) r.on)) {
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
                if (exact && r.kind != Rests.NET) {
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
        for (Rests.Rest r : Rests.resting.values()) {
            parkedAtWrite |= r.kind == Rests.PARK && !r.busy();
        }
        for (Orders.Gate g : Orders.gates.values()) {
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
        for (Map.Entry<Thread, Rests.Rest> e : Rests.resting.entrySet()) {
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
    static void awaitTurn(long seq, Orders.Gate g) {
        synchronized (turns) {
            g.inTurn = true;
            Rests.enter(Rests.TURN, turns);
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
            Rests.Rest r = Rests.resting.get(granted);
            if (r != null) {
                r.woken = true;
            }
            turns.notifyAll();
        }
        Rests.bump();
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
            long g = Rests.gen.get();
            String b = busyThread();
            lastBusy = b;
            if (b != null) {
                lastBusySeen = b;
            }
            if (b != null && System.nanoTime() - told > 5_000_000_000L) {
                told = System.nanoTime();
                Hook.log("still busy after " + (told - start) / 1_000_000 + " ms: " + b);
            }
            if (b == null && exact && !SAMPLED_ONLY && Rests.gen.get() == g) {
                // Nothing entered or left a rest while the books were read: no second look.
                exactQuiet++;
                if (Agent.TRACE) {
                    settled = checked + " (exact)";
                }
                return;
            }
            if (b == null) {
                synchronized (Rests.changed) {
                    if (Rests.gen.get() == g) {
                        Rests.changed.wait(3);
                    }
                }
                if (Rests.gen.get() == g && busyThread() == null) {
                    sampledQuiet++;
                    if (Agent.TRACE) {
                        settled = checked + " (sampled)";
                    }
                    return;
                }
            } else {
                synchronized (Rests.changed) {
                    if (Rests.gen.get() == g) {
                        Rests.changed.wait(2);
                    }
                }
            }
        }
    }

    private Quiescence() {}
}
