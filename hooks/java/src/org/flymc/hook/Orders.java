package org.flymc.hook;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What flymc orders: the mailboxes threads wait at for an enabled event (a disk write, a timer,
 * a connection's next packet), and the dispatch of each order to its mailbox or action.
 */
final class Orders {
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

    static final Map<String, Object> timerMonitors = new ConcurrentHashMap<>();

    static Point deliverPoint(String name) {
        for (Point p : Hook.points) {
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
        Hook.current = id;
        Quiescence.settled = null;
        Rests.bump();
        switch (kind) {
        case "message": {
            Object pl = ev.get("payload");
            Point d = deliverPoint(name);
            if (d != null && !(pl instanceof Map && ((Map<?, ?>) pl).containsKey("conn"))) {
                Map<String, Object> env = new HashMap<>(Hook.captures);
                env.put("payload", pl);
                env.put("fields", ev.get("fields"));
                env.put("from", ev.get("from"));
                env.put("node", (long) Hook.node);
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
                            Quiescence.early.add(order);
                        }
                    }
                    g.notifyAll();
                }
                return;
            }
            Hook.log("no delivery configured for message " + name + "; dropped");
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
                    Rests.bump();
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
            for (Point p : Hook.points) {
                if (p.kind.equals("client") && (p.name == null || p.name.equals(name))) {
                    d = p;
                }
            }
            if (d == null) {
                Hook.log("no client action configured for " + name);
                return;
            }
            Map<String, Object> env = new HashMap<>(Hook.captures);
            env.put("fields", ev.get("fields"));
            env.put("payload", ev.get("payload"));
            env.put("node", (long) Hook.node);
            env.put("id", id);
            d.action.eval(env);
            return;
        }
        default:
            Hook.log("unknown event kind " + kind);
        }
    }

    private Orders() {}
}
