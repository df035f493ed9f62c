package org.flymc.hook;

import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The books of resting threads: which thread waits in the hook, on what, and whether what it
 * waits for has arrived; every change bumps a generation the quiet check compares.
 */
final class Rests {
    /** Bumped whenever a thread enters or leaves a rest, or hook work ends. */
    static final AtomicLong gen = new AtomicLong();
    /** Notified with every bump: the quiet check waits on it for the next change. */
    static final Object changed = new Object();

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
            case TIMER: return ((Orders.Timer) on).ready();
            case GATE: return ((Orders.Gate) on).ready();
            case PARK: return ((Orders.Mail) on).ready();
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
    static void wakeOn(Object o) {
        for (Rest r : resting.values()) {
            if (r.on == o || (r.kind == TIMER && ((Orders.Timer) r.on).monitor == o)) {
                r.woken = true;
            }
        }
        bump();
    }

    /** After an item went into queue `q`: timers waiting on it look again (they stay busy
     * while it is non-empty). */
    static void inserted(Object q) {
        for (Rest r : resting.values()) {
            if (r.kind == TIMER && ((Orders.Timer) r.on).queue == q) {
                Orders.Timer t = (Orders.Timer) r.on;
                synchronized (t) {
                    t.notifyAll();
                }
            }
        }
        bump();
    }

    private Rests() {}
}
