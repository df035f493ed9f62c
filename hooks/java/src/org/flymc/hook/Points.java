package org.flymc.hook;

import java.io.EOFException;
import java.lang.reflect.Method;
import java.net.SocketException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Configured points: a rewritten call site or method entry reports what it does (a send, a
 * timer, a disk write, a read) and holds it until flymc enables it.
 */
final class Points {
    private static final Map<Integer, Method> ORIGINALS = new ConcurrentHashMap<>();

    static Map<String, Object> env(Object recv, Object self, Object[] args) {
        Map<String, Object> env = new HashMap<>(Hook.captures);
        env.put("this", self);
        env.put("recv", recv);
        for (int i = 0; i < args.length; i++) {
            env.put("arg" + i, args[i]);
        }
        env.put("node", (long) Hook.node);
        env.put("nodes", (long) Hook.nodes);
        env.put("event", Hook.current);
        return env;
    }

    /** Method `name(types)` of `owner` or a superclass, whatever its access, made callable. */
    static Method method(Class<?> owner, String name, Class<?>[] types) throws NoSuchMethodException {
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
            Hook.owait(recv, (Long) args[0]);
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
            Rests.wakeOn(recv);
        }
        try {
            return m.invoke(recv, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        } finally {
            if (recv instanceof BlockingQueue) {
                Rests.inserted(recv);
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
    static Object point(int id, Object recv, Object self, Object[] args) throws Throwable {
        Point p = Hook.points.get(id);
        Map<String, Object> env = env(recv, self, args);
        try {
            if (p.when != null && !Expr.truth(p.when.eval(env))) {
                return original(p, recv, args);
            }
        } catch (RuntimeException e) {
            // A configuration error must not take the node down: say so, and do what the code did.
            Hook.log("hook point " + p.kind + " " + p.name + " in " + p.in + ": " + e);
            return original(p, recv, args);
        }
        switch (p.kind) {
        case "send": {
            int to = -1;
            String name = null, channel = null;
            Object fields = null, payload = null;
            try {
                to = toNode(p, env);
                if (to >= 0 && to < Hook.nodes) {
                    name = p.name(env);
                    fields = p.fields != null ? p.fields.eval(env) : null;
                    payload = payloadWithConn(p, env);
                    channel = p.channel != null ? String.valueOf(p.channel.eval(env)) : null;
                }
            } catch (RuntimeException e) {
                Hook.log("hook point send in " + p.in + ": " + e);
                to = -1;
            }
            if (to >= 0 && to < Hook.nodes) {
                Events.report("message", name, to, fields, payload, channel, null);
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
                Hook.log("hook point close in " + p.in + ": " + e);
                c = null;
                closeTo = -1;
            }
            if (c != null) {
                Orders.Gate g = Orders.gate(String.valueOf(c));
                String t = g.disconnectTimer;
                if (t != null) {
                    g.disconnectTimer = null;
                    Orders.disconnects.remove(t);
                    Events.cancel(t);
                }
                int to = closeTo;
                if (to >= 0 && to < Hook.nodes && !g.broken) {
                    Map<String, Object> pl = new LinkedHashMap<>();
                    pl.put("conn", String.valueOf(c));
                    pl.put("close", Boolean.TRUE);
                    Events.report("message", p.name(env) != null ? p.name(env) : "CLOSE", to, null, pl,
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
        long deadline = Hook.vclock.get() + ms;
        // A clock timer's wait is counted in the node's own (stretched) ticks, not in real time.
        String id = Events.report("timeout", p.name(env), Hook.node, null, null, null, null, p.clock ? null : ms);
        Orders.Timer t = new Orders.Timer(q);
        boolean monitor = q == null && recv != null && p.callName.equals("wait");
        if (monitor) {
            t.monitor = recv;
        }
        Orders.timers.put(id, t);
        if (monitor) {
            Orders.timerMonitors.put(id, recv);
        }
        Rests.Rest r = Rests.enter(Rests.TIMER, t);
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
            Orders.timers.remove(id);
            Orders.timerMonitors.remove(id);
            Rests.leave();
        }
        if (fired) {
            if (p.clock) {
                Hook.vclock.accumulateAndGet(deadline, Math::max);
            }
            return q != null ? null : null;
        }
        Events.cancel(id);
        if (q != null) {
            return q.poll(0, TimeUnit.MILLISECONDS);
        }
        return null;
    }

    /** A read of the next packet on a connection: waits for flymc to enable it, then reads it. */
    private static Object read(Point p, Map<String, Object> env, Object recv, Object[] args) throws Throwable {
        String conn = String.valueOf(p.conn.eval(env));
        Orders.Gate g = Orders.gate(conn);
        g.hadReader = true;
        Object pv = p.peer != null ? p.peer.eval(env) : null;
        if (pv != null && g.disconnectTimer == null && !g.broken) {
            int peer = (int) Expr.num(pv);
            if (peer >= 0 && peer < Hook.nodes) {
                // A dead peer's connection breaks at once (the kernel closes it).
                String t = Events.report("timeout", "disconnect", Hook.node, null, null, null, peer, 0L);
                g.disconnectTimer = t;
                Orders.disconnects.put(t, g);
            }
        }
        // The socket's read timeout is a timer flymc fires, so a learner waiting on a leader
        // that went back to electing gives up as it would in real time.
        String rt = null;
        if (p.timeout != null && g.mailbox.isEmpty() && !g.broken
            && (p.timeoutWhen == null || Expr.truth(p.timeoutWhen.eval(env)))) {
            rt = Events.report("timeout", p.timeout, Hook.node, null, null, null, null);
            Orders.readTimeouts.put(rt, g);
        }
        Map<String, Object> order;
        boolean timedOut;
        Rests.enter(Rests.GATE, g);
        try {
            synchronized (g) {
                while (g.mailbox.isEmpty() && !g.broken && !g.timedOut) {
                    g.wait(100);
                }
                timedOut = g.timedOut && g.mailbox.isEmpty() && !g.broken;
                g.timedOut = false;
                order = timedOut ? null : g.mailbox.poll();
            }
            if (order != null && Quiescence.early.remove(order)) {
                Quiescence.awaitTurn(((Number) order.get("seq")).longValue(), g);
            }
            if (!timedOut) {
                Rests.pinned.add(Thread.currentThread());
            }
        } finally {
            if (rt != null) {
                Orders.readTimeouts.remove(rt);
            }
            Rests.leave();
        }
        if (timedOut) {
            throw new java.net.SocketTimeoutException("flymc: the read timed out");
        }
        if (rt != null) {
            Events.cancel(rt);
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
            Rests.pinned.remove(Thread.currentThread());
            Rests.bump();
        }
    }

    /** Method entry of a configured point (disk crash points, records, and timers without a
     *  call: the method waits at its entry until flymc fires the timer, e.g. a node's start). */
    static void entry(int id, Object self, Object[] args) throws Throwable {
        Point p = Hook.points.get(id);
        Map<String, Object> env = env(null, self, args);
        if (p.when != null && !Expr.truth(p.when.eval(env))) {
            return;
        }
        if (p.kind.equals("record")) {
            Hook.recorded.add(String.valueOf(p.fields.eval(env)));
            Rests.bump();
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
        String eid = Events.report("disk", p.name(env), Hook.node, fields, null, null, null);
        Orders.Mail m = new Orders.Mail();
        Orders.parked.put(eid, m);
        Rests.enter(Rests.PARK, m);
        try {
            synchronized (m) {
                while (m.order == null) {
                    m.wait(100);
                }
            }
        } finally {
            Orders.parked.remove(eid);
            Rests.leave();
        }
    }

    /**
     * Method exit of a `wake` point: notify the monitor its expression names, so a thread
     * waiting there re-checks a condition that changed (a timer's `when`). Waits may wake
     * spuriously, so this never changes what the code can do.
     */
    static void exit(int id, Object self) {
        Point p = Hook.points.get(id);
        try {
            Object o = p.action.eval(env(null, self, new Object[0]));
            if (o != null) {
                synchronized (o) {
                    Hook.onotifyAll(o);
                }
            }
        } catch (RuntimeException e) {
            Hook.log("hook point wake in " + p.in + ": " + e);
        }
    }

    /** Constructor exit of a captured class. */
    static void capture(int id, Object self) {
        Hook.captures.put(Hook.points.get(id).name, self);
    }

    private Points() {}
}
